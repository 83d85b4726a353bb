"""The files of a release besides the binaries, in one place: the version and the release
toolchain (from Cargo.toml), the archives (one top-level folder each), the README they carry, the
SBOMs, SHA256SUMS, and the package manifests generated from those checksums — krew, Homebrew (a
tap's layout), scoop and winget.
Run by scripts/release.sh and by the release workflow's publish job; never edit the outputs.

Usage:
  release_files.py version                        print the crate's version
  release_files.py toolchain                      print the Rust version releases are built
                                                  with (Cargo.toml's package.metadata.release)
  release_files.py sbom SRC DEST TARGET           cargo-cyclonedx's SBOM of TARGET (SRC) made
                                                  exact and free of this checkout's path, as
                                                  DEST; fails unless it names every crate of
                                                  `cargo tree -e normal --target TARGET`
  release_files.py readme SRC DEST TAG OWNER/REPO the README for an archive: links into the
                                                  repository made absolute (the archive has
                                                  no kubeconfig-samples/, bench/, ...)
  release_files.py archive DIR FOLDER OUT         DIR/FOLDER as OUT (.tar.gz or .zip), every
                                                  member under FOLDER/
  release_files.py dist DIST TAG OWNER/REPO       SHA256SUMS of DIST's archives and SBOMs,
                                                  then the manifests from it
"""

import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Rust target -> (krew/Go os, arch). Windows archives are zips, the others tar.gz.
PLATFORMS = {
    "x86_64-unknown-linux-musl": ("linux", "amd64"),
    "aarch64-unknown-linux-musl": ("linux", "arm64"),
    "x86_64-apple-darwin": ("darwin", "amd64"),
    "aarch64-apple-darwin": ("darwin", "arm64"),
    "x86_64-pc-windows-gnu": ("windows", "amd64"),
}

SUMMARY = "Kubernetes exec credential plugin for OpenID Connect and OAuth 2.0"

DESCRIPTION = """\
    kubecred is a client-go exec credential plugin for OpenID Connect and OAuth 2.0 identity
    providers: browser login with PKCE, the device flow, client credentials, token exchange and
    refresh, with a private token cache. As a kubectl plugin it shows and manages the logins:
      kubectl kubecred status
      kubectl kubecred login --issuer-url https://idp.example --client-id kubernetes
      kubectl kubecred logout --all
    Configure it as the `exec` command of a kubeconfig user (see its README)."""

# krew links only `kubectl-<name>` onto PATH, so a kubeconfig must run that name.
KREW_CAVEATS = """\
    krew puts kubecred on PATH as kubectl-kubecred only. In a kubeconfig exec stanza write
      command: kubectl-kubecred
    (`kubectl kubecred setup` prints it so): that link survives `kubectl krew upgrade`, the
    versioned file behind it does not."""

# A fixed time for every archive member (reproducible archives), unless SOURCE_DATE_EPOCH says.
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "1700000000"))


def version():
    with open(ROOT / "Cargo.toml", "rb") as manifest:
        return tomllib.load(manifest)["package"]["version"]


def toolchain():
    """The Rust version releases are built with: a release rebuilds bit for bit with it only."""
    with open(ROOT / "Cargo.toml", "rb") as manifest:
        return tomllib.load(manifest)["package"]["metadata"]["release"]["rust"]


def folder_name(version_, target):
    return f"kubecred-{version_}-{target}"


def archive_name(version_, target):
    ext = "zip" if PLATFORMS[target][0] == "windows" else "tar.gz"
    return f"{folder_name(version_, target)}.{ext}"


def sbom_name(version_, target):
    return f"{folder_name(version_, target)}.cdx.json"


# ---- archives -------------------------------------------------------------------------------


def members(directory, folder):
    """(path on disk, name in the archive) of FOLDER and everything under it, sorted."""
    found = [(directory / folder, folder)]
    for path in sorted((directory / folder).rglob("*")):
        found.append((path, path.relative_to(directory).as_posix()))
    return found


def mode_of(path):
    return 0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644


def write_archive(directory, folder, out):
    """One top-level folder, no `.` entry: extracting never touches the directory it is
    extracted into (a `./` member carries a mode that tar applies to it)."""
    directory, out = Path(directory), Path(out)
    if out.name.endswith(".zip"):
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for path, name in members(directory, folder):
                info = zipfile.ZipInfo(name + ("/" if path.is_dir() else ""), time.gmtime(EPOCH)[:6])
                info.external_attr = (mode_of(path) | (0o040000 if path.is_dir() else 0o100000)) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, b"" if path.is_dir() else path.read_bytes())
        return
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path, name in members(directory, folder):
            info = tarfile.TarInfo(name)
            info.mtime, info.mode = EPOCH, mode_of(path)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                data = path.read_bytes()
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=EPOCH, filename="") as gz:
        gz.write(buffer.getvalue())


def archive_readme(source, dest, tag, repository):
    """README.md with its links into the repository made absolute, at the release's tag."""
    base = f"https://github.com/{repository}"

    def absolute(match):
        text, target = match.group(1), match.group(2)
        if re.match(r"^([a-z]+:|#)", target):
            return match.group(0)
        path = target.split("#")[0]
        kind = "blob" if "." in Path(path).name else "tree"
        return f"[{text}]({base}/{kind}/{tag}/{target})"

    text = Path(source).read_text()
    Path(dest).write_text(re.sub(r"\[([^\]]*)\]\(([^)\s]+)\)", absolute, text))


# ---- the SBOMs ------------------------------------------------------------------------------


def linked_crates(target):
    """{(name, version)} of every crate `cargo tree -e normal --target TARGET` shows: what the
    binary for TARGET is built from (kubecred included), with cargo's feature resolver."""
    tree = subprocess.run(
        ["cargo", "tree", "--locked", "-e", "normal", "--target", target, "--prefix", "none",
         "--format", "{p}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    crates = set()
    for line in tree.splitlines():
        name, version_ = line.split()[:2]
        crates.add((name, version_.removeprefix("v")))
    return crates


def write_sbom(source, dest, target):
    """cargo-cyclonedx lists every crate `cargo metadata` resolves for the target, optional
    dependencies no feature enables among them (CycloneDX/cyclonedx-rust-cargo#766: for kubecred
    quinn, borsh, dbus-secret-service...): a scanner would report their advisories against a
    binary that does not hold them. So the document keeps the components `cargo tree -e normal`
    shows (cargo's feature resolver, what the build compiles) and the dependency edges between
    them; and the root's bom-ref (cargo's package id) is made the same wherever the checkout is,
    `path+file://.#kubecred@<version>` (`.` as in its purl). Fails when a crate of the tree is not
    in the document."""
    bom = json.loads(Path(source).read_text())
    linked = linked_crates(target)
    root = bom["metadata"]["component"]
    named = {(c["name"], c["version"]) for c in bom["components"]} | {(root["name"], root["version"])}
    missing = sorted(linked - named)
    if missing:
        sys.exit(f"release_files: the SBOM of {target} lacks {', '.join(f'{n} {v}' for n, v in missing)}")
    kept = [c for c in bom["components"] if (c["name"], c["version"]) in linked]
    refs = {c["bom-ref"] for c in kept} | {root["bom-ref"]}
    bom["components"] = kept
    bom["dependencies"] = [
        {**d, "dependsOn": [r for r in d.get("dependsOn", []) if r in refs]}
        for d in bom.get("dependencies", []) if d["ref"] in refs
    ]
    text = json.dumps(bom, indent=2, ensure_ascii=False) + "\n"
    # Cargo's package id: path+file://<checkout>#kubecred@<version>, or #<version> alone when the
    # checkout's directory is named kubecred.
    text = re.sub(re.escape(f"path+file://{ROOT.as_posix()}#") + r"(?:kubecred@)?", "path+file://.#kubecred@", text)
    Path(dest).write_text(text)


# ---- checksums and manifests ----------------------------------------------------------------


def write_sums(dist):
    """SHA256SUMS (sha256sum's format) of every archive and SBOM in DIST, sorted by name."""
    names = sorted(p.name for p in dist.iterdir() if p.name.endswith((".tar.gz", ".zip", ".cdx.json")))
    if not any(n.endswith((".tar.gz", ".zip")) for n in names):
        sys.exit(f"release_files: no archive in {dist}")
    lines = [f"{hashlib.sha256((dist / n).read_bytes()).hexdigest()}  {n}" for n in names]
    (dist / "SHA256SUMS").write_text("\n".join(lines) + "\n")


def built(version_, sums_path):
    """(target, archive name, sha256) of every archive SHA256SUMS lists, in PLATFORMS' order."""
    listed = {}
    for line in open(sums_path):
        digest, name = line.split()
        listed[name.lstrip("*")] = digest
    return [
        (target, archive_name(version_, target), listed[archive_name(version_, target)])
        for target in PLATFORMS
        if archive_name(version_, target) in listed
    ]


def krew(version_, tag, base, archives):
    lines = [
        f"# Generated by scripts/release_files.py for {tag}: do not edit.",
        "apiVersion: krew.googlecontainertools.github.com/v1alpha2",
        "kind: Plugin",
        "metadata:",
        "  name: kubecred",
        "spec:",
        f"  version: {tag}",
        f"  homepage: {base}",
        "  shortDescription: Log in to clusters with OpenID Connect / OAuth 2.0",
        "  description: |",
        DESCRIPTION,
        "  caveats: |",
        KREW_CAVEATS,
        "  platforms:",
    ]
    for target, name, digest in archives:
        os_name, arch = PLATFORMS[target]
        exe = "kubecred.exe" if os_name == "windows" else "kubecred"
        folder = folder_name(version_, target)
        lines += [
            "  - selector:",
            f"      matchLabels: {{os: {os_name}, arch: {arch}}}",
            f"    uri: {base}/releases/download/{tag}/{name}",
            f"    sha256: {digest}",
            f"    bin: {exe}",
            "    files:",
            f"    - {{from: {folder}/{exe}, to: .}}",
            f"    - {{from: {folder}/LICENSE, to: .}}",
        ]
    return "\n".join(lines) + "\n"


def formula(tag, base, archives):
    """The Homebrew formula for a tap (Formula/kubecred.rb). No `version`: Homebrew reads it
    from the archive names (kubecred-X.Y.Z-...), and brew audit flags one that repeats it."""

    def block(os_name):
        entries = [(t, n, d) for t, n, d in archives if PLATFORMS[t][0] == os_name]
        if not entries:
            return []
        out = [f"  on_{'macos' if os_name == 'darwin' else 'linux'} do"]
        for target, name, digest in entries:
            cpu = "arm" if PLATFORMS[target][1] == "arm64" else "intel"
            out += [
                f"    on_{cpu} do",
                f'      url "{base}/releases/download/{tag}/{name}"',
                f'      sha256 "{digest}"',
                "    end",
            ]
        out.append("  end")
        return out

    lines = [
        f"# Generated by scripts/release_files.py for {tag}: do not edit.",
        "class Kubecred < Formula",
        f'  desc "{SUMMARY}"',
        f'  homepage "{base}"',
        '  license "Apache-2.0"',
        *block("darwin"),
        *block("linux"),
        "",
        "  def install",
        '    bin.install "kubecred"',
        '    bin.install_symlink "kubecred" => "kubectl-kubecred"',
        '    man1.install "man/kubecred.1"',
        '    bash_completion.install "completions/kubecred.bash" => "kubecred"',
        '    zsh_completion.install "completions/_kubecred"',
        '    fish_completion.install "completions/kubecred.fish"',
        "  end",
        "",
        "  test do",
        '    assert_match version.to_s, shell_output("#{bin}/kubecred --version")',
        "  end",
        "end",
    ]
    return "\n".join(lines) + "\n"


def scoop(version_, tag, base, archives):
    """A scoop manifest, installable from its URL (`scoop install <url>`). The shim
    kubectl-kubecred makes `kubectl kubecred` work too."""
    (target, name, digest), = [a for a in archives if PLATFORMS[a[0]][0] == "windows"]
    manifest = {
        "version": version_,
        "description": SUMMARY,
        "homepage": base,
        "license": "Apache-2.0",
        "architecture": {
            "64bit": {
                "url": f"{base}/releases/download/{tag}/{name}",
                "hash": digest,
                "extract_dir": folder_name(version_, target),
            }
        },
        "bin": ["kubecred.exe", ["kubecred.exe", "kubectl-kubecred"]],
    }
    return json.dumps(manifest, indent=4) + "\n"


WINGET_SCHEMA = "1.6.0"


def winget(version_, tag, base, repository, archives):
    """winget's multi-file manifest (version, installer, default locale): a zip holding a
    portable exe, whose command alias is kubecred. {file name: text}."""
    (target, name, digest), = [a for a in archives if PLATFORMS[a[0]][0] == "windows"]
    owner = repository.split("/")[0]
    package = f"{owner}.kubecred"
    head = [
        f"# Generated by scripts/release_files.py for {tag}: do not edit.",
        f"# yaml-language-server: $schema=https://aka.ms/winget-manifest.{{kind}}.{WINGET_SCHEMA}.schema.json",
        f"PackageIdentifier: {package}",
        f"PackageVersion: {version_}",
    ]

    def manifest(kind, body):
        lines = [line.replace("{kind}", kind) for line in head] + body
        lines += [f"ManifestType: {kind}", f"ManifestVersion: {WINGET_SCHEMA}"]
        return "\n".join(lines) + "\n"

    exe = f"{folder_name(version_, target)}\\kubecred.exe"
    return {
        f"{package}.yaml": manifest("version", ["DefaultLocale: en-US"]),
        f"{package}.installer.yaml": manifest(
            "installer",
            [
                "InstallerType: zip",
                "NestedInstallerType: portable",
                "NestedInstallerFiles:",
                f"- RelativeFilePath: {json.dumps(exe)}",
                "  PortableCommandAlias: kubecred",
                "Installers:",
                "- Architecture: x64",
                f"  InstallerUrl: {base}/releases/download/{tag}/{name}",
                f"  InstallerSha256: {digest.upper()}",
            ],
        ),
        f"{package}.locale.en-US.yaml": manifest(
            "defaultLocale",
            [
                "PackageLocale: en-US",
                f"Publisher: {owner}",
                "PackageName: kubecred",
                f"PackageUrl: {base}",
                "License: Apache-2.0",
                f"LicenseUrl: {base}/blob/{tag}/LICENSE",
                f"ShortDescription: {SUMMARY}",
                "Moniker: kubecred",
                "Tags: [kubernetes, kubectl, oidc, oauth2]",
            ],
        ),
    }


def write_dist(dist, tag, repository):
    dist = Path(dist)
    version_ = version()
    base = f"https://github.com/{repository}"
    write_sums(dist)
    archives = built(version_, dist / "SHA256SUMS")
    (dist / "kubecred.yaml").write_text(krew(version_, tag, base, archives))
    tap = dist / "homebrew-tap" / "Formula"
    tap.mkdir(parents=True, exist_ok=True)
    (tap / "kubecred.rb").write_text(formula(tag, base, archives))
    if any(PLATFORMS[t][0] == "windows" for t, _, _ in archives):
        (dist / "kubecred.json").write_text(scoop(version_, tag, base, archives))
        (dist / "winget").mkdir(exist_ok=True)
        for name, text in winget(version_, tag, base, repository, archives).items():
            (dist / "winget" / name).write_text(text)


def main():
    command, *args = sys.argv[1:] or ["help"]
    if command == "version" and not args:
        print(version())
    elif command == "toolchain" and not args:
        print(toolchain())
    elif command == "sbom" and len(args) == 3:
        write_sbom(*args)
    elif command == "readme" and len(args) == 4:
        archive_readme(*args)
    elif command == "archive" and len(args) == 3:
        write_archive(*args)
    elif command == "dist" and len(args) == 3:
        write_dist(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

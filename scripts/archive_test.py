"""The release in dist/ as its users meet it (run by scripts/archive-test.sh, which builds dist/
first when it has no SHA256SUMS):

- every archive: its checksum; one top-level folder kubecred-<version>-<target>/ and no `.`
  entry; the binary, LICENSE, THIRD-PARTY-LICENSES.md, README.md, the completions and the man
  page in it; extracted by tar, unzip and Python into a 0700 directory, which stays 0700; every
  name(1) reference of its man page is a page it ships, and the page renders without literal
  backticks; its README links to nothing the archive lacks;
- what every binary is made of, three ways that must agree: its SBOM (in SHA256SUMS, the crates
  with their licence and Cargo.lock checksum), the dependency list embedded in the binary as
  `cargo audit bin`, trivy and syft read it (read back here offline by rust-audit-info, from
  crates.io), and THIRD-PARTY-LICENSES.md, which has a licence for each crate;
- README's Linux install block, run as written by bash and by zsh on a fresh HOME (no
  ~/.local/bin) against dist/ served on loopback: a working kubecred in ~/.local/bin, the man
  page where `man` finds it, the PATH hint; run again over that install with ~/.local/bin on
  PATH; then README's completions block: bash-completion and zsh load what it wrote;
- the manifests against the archives and SHA256SUMS: krew (its files and bin in each archive;
  installed in krew's layout, `kubectl kubecred` runs), Homebrew (`ruby -c`, the audit rules
  that need no brew, its `install` and `test do` run against the Linux archive by
  tests/support/brew_formula.rb), scoop and winget.

Usage: python3 scripts/archive_test.py DIST
"""

import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import release_files  # noqa: E402

VERSION = release_files.version()
TAG = f"v{VERSION}"
README_DOWNLOADS = "https://github.com/OWNER/kubecred/releases/latest/download"
# What a fresh account's PATH has: no ~/.local/bin.
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def fail(message):
    sys.exit(f"archive-test: {message}")


def passed(what):
    print(f"    {what}: ok", file=sys.stderr)


def run(argv, **kwargs):
    """Runs argv; its CompletedProcess (text); fails the test with its output if it fails."""
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        fail(f"{argv} exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}")
    return done


def fresh_env(home, path=SYSTEM_PATH):
    return {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8"}


# ---- the archives -------------------------------------------------------------------------


def read_sums(dist):
    sums = {}
    for line in (dist / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        actual = hashlib.sha256((dist / name).read_bytes()).hexdigest()
        if actual != digest:
            fail(f"{name}: SHA256SUMS says {digest}, the file is {actual}")
        sums[name] = digest
    if not sums:
        fail("SHA256SUMS lists no archive")
    return sums


def target_of(name):
    stem = name.removesuffix(".tar.gz").removesuffix(".zip")
    return stem.removeprefix(f"kubecred-{VERSION}-")


def member_names(archive):
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            return [n.rstrip("/") for n in z.namelist()]
    with tarfile.open(archive) as t:
        return [m.name.rstrip("/") for m in t.getmembers()]


def extractions(archive):
    """(how, function(directory)) for every way a user extracts this archive."""
    if archive.name.endswith(".zip"):
        return [
            ("unzip", lambda d: run(["unzip", "-q", str(archive), "-d", str(d)])),
            ("Python zipfile", lambda d: zipfile.ZipFile(archive).extractall(d)),
        ]
    return [
        ("tar -C", lambda d: run(["tar", "-xzf", str(archive), "-C", str(d)])),
        # README's way: tar in the directory itself.
        ("tar in the directory", lambda d: run(["tar", "-xzf", str(archive)], cwd=d)),
        ("Python tarfile", lambda d: tarfile.open(archive).extractall(d, filter="data")),
    ]


def check_archive(dist, name, work):
    archive = dist / name
    target = target_of(name)
    folder = release_files.folder_name(VERSION, target)
    names = member_names(archive)
    strays = [n for n in names if n != folder and not n.startswith(folder + "/")]
    if strays or any(n in ("", ".", "./") or n.startswith(("./", "/")) or ".." in n.split("/") for n in names):
        fail(f"{name}: members outside {folder}/: {strays or names}")
    exe = "kubecred.exe" if "windows" in target else "kubecred"
    needed = [exe, "LICENSE", "THIRD-PARTY-LICENSES.md", "README.md", "man/kubecred.1", "completions/kubecred.bash",
              "completions/_kubecred", "completions/kubecred.fish", "completions/_kubecred.ps1"]
    missing = [n for n in needed if f"{folder}/{n}" not in names]
    if missing:
        fail(f"{name}: lacks {missing}")
    for how, extract in extractions(archive):
        target_dir = Path(tempfile.mkdtemp(dir=work))
        os.chmod(target_dir, 0o700)
        extract(target_dir)
        mode = stat.S_IMODE(target_dir.stat().st_mode)
        if mode != 0o700:
            fail(f"{name}: extracting it ({how}) changed the directory's mode from 0700 to {mode:04o}")
        if not (target_dir / folder / exe).is_file():
            fail(f"{name}: extracted ({how}), {folder}/{exe} is not there")
    unpacked = target_dir / folder
    check_man_page(name, unpacked)
    check_readme_links(name, unpacked)
    passed(f"{name}: one folder, {len(names)} members, extracting it leaves the directory it lands in at 0700")
    return unpacked


def check_man_page(name, unpacked):
    """Every name(N) the rendered page refers to is a page this archive ships."""
    shipped = {p.name for p in (unpacked / "man").iterdir()}
    env = {**os.environ, "MANWIDTH": "100", "MANPAGER": "cat", "LANG": "C.UTF-8"}
    rendered = run(["man", "-l", str(unpacked / "man" / "kubecred.1")], env=env).stdout
    references = set(re.findall(r"\b([A-Za-z][\w.-]*)\((\d)\)", rendered))
    unresolved = sorted(f"{page}({section})" for page, section in references
                        if f"{page}.{section}" not in shipped)
    if unresolved:
        fail(f"{name}: the man page refers to {unresolved}, which the archive does not ship ({sorted(shipped)})")
    if "`" in rendered:
        line = next(line for line in rendered.splitlines() if "`" in line)
        fail(f"{name}: the rendered man page shows a literal backtick: {line.strip()}")


def check_readme_links(name, unpacked):
    text = (unpacked / "README.md").read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^([a-z]+:|#)", target):
            if target.startswith("https://github.com/") and "/blob/" in target and f"/{TAG}/" not in target:
                fail(f"{name}: README links {target}, not at the release's tag {TAG}")
            continue
        if not (unpacked / target.split("#")[0]).exists():
            fail(f"{name}: README links {target}, which the archive does not have")


# ---- what each binary is made of -----------------------------------------------------------


def sbom_crates(dist, sums, target):
    """{(name, version)} of the components of TARGET's SBOM, which SHA256SUMS must list; each
    with a licence and, from crates.io, Cargo.lock's checksum."""
    name = release_files.sbom_name(VERSION, target)
    if name not in sums:
        fail(f"SHA256SUMS lists no SBOM for {target} ({name})")
    bom = json.loads((dist / name).read_text())
    if bom.get("bomFormat") != "CycloneDX" or bom["metadata"]["component"]["name"] != "kubecred":
        fail(f"{name} is not kubecred's CycloneDX SBOM")
    crates = set()
    for component in bom["components"]:
        label = f"{name}: {component['name']} {component['version']}"
        if not component.get("licenses"):
            fail(f"{label} has no licence")
        if not any(h["alg"] == "SHA-256" and len(h["content"]) == 64 for h in component.get("hashes", [])):
            fail(f"{label} has no SHA-256 checksum")
        crates.add((component["name"], component["version"]))
    return crates


def embedded_crates(binary):
    """The dependency list cargo auditable embedded in BINARY, read by rust-audit-info: the
    {(name, version)} compiled into it (kind runtime), and those that ran only at build time
    (build: proc-macros, build scripts and their dependencies); kubecred itself left out."""
    listed = json.loads(run(["rust-audit-info", str(binary)]).stdout)
    kinds = {"runtime": set(), "build": set()}
    for package in listed["packages"]:
        if not package.get("root"):
            kinds[package.get("kind", "runtime")].add((package["name"], package["version"]))
    return kinds["runtime"], kinds["build"]


def check_contents(dist, sums, name, unpacked):
    """The binary's embedded list reads back and agrees with its SBOM: every crate of the SBOM is
    one the list names (compiled in, or at build time: the SBOM has the proc-macros, which cargo
    auditable counts as build-time). The list may name more: cargo auditable, like `cargo
    metadata`, counts optional dependencies no feature enables (quinn, borsh...), which the SBOM
    leaves out as `cargo tree` does (release_files.py)."""
    target = target_of(name)
    exe = "kubecred.exe" if "windows" in target else "kubecred"
    in_sbom = sbom_crates(dist, sums, target)
    linked, build_time = embedded_crates(unpacked / exe)
    if len(linked) < 100:
        fail(f"{name}: the dependency list embedded in {exe} names {len(linked)} crates")
    unlisted = sorted(in_sbom - linked - build_time)
    if unlisted:
        fail(f"{name}: the SBOM names crates the binary's embedded dependency list does not: {unlisted}")
    licences = (unpacked / "THIRD-PARTY-LICENSES.md").read_text()
    unlicensed = sorted(f"{n} {v}" for n, v in in_sbom if f"{n} {v}" not in licences)
    if unlicensed:
        fail(f"{name}: THIRD-PARTY-LICENSES.md names no licence for {unlicensed}")
    extra = sorted(f"{n} {v}" for n, v in linked - in_sbom)
    passed(f"{name}: its SBOM ({len(in_sbom)} crates), the dependency list embedded in the binary "
           f"({len(linked)} compiled in; not linked but listed: {', '.join(extra) or 'none'}) and its licences agree")


# ---- README's install block, run as written ------------------------------------------------


def readme_block(marker):
    """The fenced block after the `<!-- marker...` comment in README.md, dedented."""
    text = (ROOT / "README.md").read_text()
    parts = text.split(f"<!-- {marker}")
    if len(parts) != 2:
        fail(f"README.md has no single <!-- {marker} --> block")
    block = parts[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return textwrap.dedent(block)


@functools.lru_cache(maxsize=1)
def serve(dist):
    """dist/ over http on loopback (the README's download URL stands for it); the base URL."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(dist))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def shell_argv(shell, script):
    # zsh -f: no startup files, as on a fresh account.
    return ["zsh", "-f", "-c", script] if shell == "zsh" else ["bash", "-c", script]


def check_install_line(dist, work):
    block = readme_block("install-linux")
    if block.count(README_DOWNLOADS) != 1:
        fail(f"README's Linux install block no longer downloads from {README_DOWNLOADS}")
    script = block.replace(README_DOWNLOADS, serve(dist))
    for shell in ("bash", "zsh"):
        home = work / f"home-{shell}"
        cwd = work / f"downloads-{shell}"
        home.mkdir()
        cwd.mkdir()
        first = run(shell_argv(shell, script), cwd=cwd, env=fresh_env(home))
        if "which is not on your PATH yet" not in first.stdout:
            fail(f"{shell}: the install block did not say that ~/.local/bin is not on PATH:\n{first.stdout}")
        installed = home / ".local/bin/kubecred"
        version = run([str(installed), "--version"], env=fresh_env(home)).stdout
        if not version.startswith(f"kubecred {VERSION} "):
            fail(f"{shell}: the installed kubecred says {version!r}")
        with_local_bin = f"{home}/.local/bin:{SYSTEM_PATH}"
        page = run(["man", "-w", "kubecred"], env=fresh_env(home, with_local_bin)).stdout.strip()
        if page != str(home / ".local/share/man/man1/kubecred.1"):
            fail(f"{shell}: man -w kubecred found {page!r}, not the installed page")
        # Again, over that install, now that ~/.local/bin is on PATH: an upgrade.
        again = run(shell_argv(shell, script), cwd=cwd, env=fresh_env(home, with_local_bin))
        # --version's first line names the version, then one `name: value` line per fact.
        lines = again.stdout.splitlines()
        first = max((i for i, line in enumerate(lines) if line.startswith(f"kubecred {VERSION} ")), default=None)
        if first is None or not lines[-1].startswith("rustc: ") or not all(": " in line for line in lines[first + 1:]):
            fail(f"{shell}: the second run did not end with kubecred --version:\n{again.stdout}")
        passed(f"README's Linux install block in {shell} on a fresh HOME, and again over it")
    return home, with_local_bin


def check_completions_block(home, path):
    run(["bash", "-c", readme_block("completions")], cwd=home, env=fresh_env(home, path))
    # _completion_loader answers 124 ("retry") once it has loaded a completion.
    loaded = run(
        ["bash", "-c", "source /usr/share/bash-completion/bash_completion && "
         "_completion_loader kubecred; complete -p kubecred"],
        env=fresh_env(home, path),
    ).stdout
    if "_kubecred" not in loaded:
        fail(f"bash-completion did not load the completion from ~/.local/share: {loaded!r}")
    zsh = run(
        ["zsh", "-f", "-c", "fpath=(~/.zfunc $fpath); autoload -Uz compinit && compinit -u -D "
         "&& print -r -- ${_comps[kubecred]}"],
        env=fresh_env(home, path),
    ).stdout.strip()
    if zsh != "_kubecred":
        fail(f"zsh did not load the completion from ~/.zfunc: {zsh!r}")
    if not (home / ".config/fish/completions/kubecred.fish").is_file():
        fail("the completions block wrote no fish completion")
    page = run(["man", "-w", "kubecred"], env=fresh_env(home, path)).stdout.strip()
    if page != str(home / ".local/share/man/man1/kubecred.1"):
        fail(f"after the completions block, man -w kubecred found {page!r}")
    passed("README's completions block: bash-completion, zsh and man find what it wrote")


# ---- the manifests ------------------------------------------------------------------------


def url_archive(url, sums):
    name = url.rsplit("/", 1)[1]
    if f"/releases/download/{TAG}/" not in url or name not in sums:
        fail(f"{url} is not an archive of this release ({TAG})")
    return name


def check_krew(dist, sums, work):
    manifest = yaml.safe_load((dist / "kubecred.yaml").read_text())
    spec = manifest["spec"]
    if spec["version"] != TAG or "kubectl-kubecred" not in spec.get("caveats", ""):
        fail(f"krew: version {spec['version']!r} or caveats without kubectl-kubecred")
    for platform in spec["platforms"]:
        name = url_archive(platform["uri"], sums)
        if platform["sha256"] != sums[name]:
            fail(f"krew: {name}: sha256 {platform['sha256']} is not SHA256SUMS's")
        members = set(member_names(dist / name))
        for op in platform["files"]:
            if op["from"] not in members:
                fail(f"krew: {name} has no {op['from']}")
        if platform["bin"] not in {Path(op["from"]).name for op in platform["files"]}:
            fail(f"krew: bin {platform['bin']} is not among the files installed")
    # krew's layout: the files in a versioned store, the bin linked as kubectl-kubecred.
    (linux,) = [p for p in spec["platforms"] if p["selector"]["matchLabels"] == {"os": "linux", "arch": "amd64"}]
    name = url_archive(linux["uri"], sums)
    unpacked = work / "krew-download"
    tarfile.open(dist / name).extractall(unpacked, filter="data")
    store = work / "krew/store/kubecred" / TAG
    store.mkdir(parents=True)
    for op in linux["files"]:
        shutil.copy2(unpacked / op["from"], store / Path(op["from"]).name)
    (work / "krew/bin").mkdir()
    (work / "krew/bin/kubectl-kubecred").symlink_to(store / linux["bin"])
    env = fresh_env(work / "krew", f"{work}/krew/bin:{SYSTEM_PATH}")
    kubectl = shutil.which("kubectl") or fail("kubectl is needed to run the plugin")
    version = run([kubectl, "kubecred", "--version"], env=env).stdout
    if not version.startswith(f"kubecred {VERSION} "):
        fail(f"krew layout: kubectl kubecred --version said {version!r}")
    passed(f"krew manifest: {len(spec['platforms'])} platforms; installed in its layout, kubectl kubecred runs")


def check_formula(dist, sums, linux_folder, work):
    formula = dist / "homebrew-tap/Formula/kubecred.rb"
    run(["ruby", "-c", str(formula)])
    text = formula.read_text()
    if re.search(r"^\s*version\s", text, re.M):
        fail("formula: a version stanza (brew audit: it is read from the url)")
    desc = re.search(r'^\s*desc "([^"]*)"', text, re.M).group(1)
    if len(desc) > 80 or desc.endswith(".") or re.match(r"(?i)(a|an|the|kubecred)\b", desc):
        fail(f"formula: desc {desc!r} breaks brew audit's rules (80 characters, no article or name first, no period)")
    if not re.search(r'^\s*license "Apache-2.0"', text, re.M) or "test do" not in text:
        fail("formula: no license or no test block")
    urls = re.findall(r'url "([^"]+)"\s+sha256 "([0-9a-f]{64})"', text)
    if not urls:
        fail("formula: no url with a sha256")
    for url, digest in urls:
        if not url.startswith("https://") or sums[url_archive(url, sums)] != digest:
            fail(f"formula: {url} with sha256 {digest} does not match SHA256SUMS")
    # Its install and test blocks, against a copy of the unpacked Linux archive.
    source = work / "brew-source" / linux_folder.name
    shutil.copytree(linux_folder, source, symlinks=True)
    prefix = work / "brew-prefix"
    chosen = run(["ruby", str(ROOT / "tests/support/brew_formula.rb"), str(formula), str(source),
                  str(prefix), "linux", "intel"]).stdout.split()
    if chosen[0].rsplit("/", 1)[1] != f"{linux_folder.name}.tar.gz":
        fail(f"formula: on Linux x86_64 it downloads {chosen[0]}")
    for installed in ["bin/kubecred", "share/man/man1/kubecred.1", "etc/bash_completion.d/kubecred",
                      "share/zsh/site-functions/_kubecred", "share/fish/vendor_completions.d/kubecred.fish"]:
        if not (prefix / installed).is_file():
            fail(f"formula: install left no {installed}")
    link = prefix / "bin/kubectl-kubecred"
    if not link.is_symlink() or os.readlink(link) != "kubecred":
        fail("formula: bin/kubectl-kubecred is not a link to kubecred")
    passed("Homebrew formula (tap layout): ruby -c, audit rules, install and test against the archive")


def check_scoop(dist, sums):
    manifest = json.loads((dist / "kubecred.json").read_text())
    arch = manifest["architecture"]["64bit"]
    name = url_archive(arch["url"], sums)
    if manifest["version"] != VERSION or arch["hash"] != sums[name]:
        fail(f"scoop: version {manifest['version']} or hash {arch['hash']} is not this release's")
    members = set(member_names(dist / name))
    if arch["extract_dir"] not in members:
        fail(f"scoop: {name} has no folder {arch['extract_dir']}")
    for entry in manifest["bin"]:
        exe = entry if isinstance(entry, str) else entry[0]
        if f"{arch['extract_dir']}/{exe}" not in members:
            fail(f"scoop: bin {exe} is not in {arch['extract_dir']}/")
    passed("scoop manifest: the zip's checksum, folder and binary")


# The fields winget's 1.6.0 schemas require of each manifest type, and the identifier's pattern.
WINGET_REQUIRED = {
    "version": ["PackageIdentifier", "PackageVersion", "DefaultLocale", "ManifestType", "ManifestVersion"],
    "installer": ["PackageIdentifier", "PackageVersion", "Installers", "ManifestType", "ManifestVersion"],
    "defaultLocale": ["PackageIdentifier", "PackageVersion", "PackageLocale", "Publisher", "PackageName",
                      "License", "ShortDescription", "ManifestType", "ManifestVersion"],
}
WINGET_ID = re.compile(r'^[^.\s\\/:*?"<>|\x01-\x1f]{1,32}(\.[^.\s\\/:*?"<>|\x01-\x1f]{1,32}){1,7}$')


def check_winget(dist, sums):
    manifests = {}
    for path in sorted((dist / "winget").glob("*.yaml")):
        manifest = yaml.safe_load(path.read_text())
        manifests[manifest["ManifestType"]] = manifest
        lacking = [k for k in WINGET_REQUIRED[manifest["ManifestType"]] if k not in manifest]
        if lacking or manifest["ManifestVersion"] != "1.6.0":
            fail(f"winget: {path.name} lacks {lacking} or is not manifest version 1.6.0")
        if not WINGET_ID.match(manifest["PackageIdentifier"]) or manifest["PackageVersion"] != VERSION:
            fail(f"winget: {path.name}: identifier {manifest['PackageIdentifier']!r} or version")
    if sorted(manifests) != sorted(WINGET_REQUIRED):
        fail(f"winget: manifests {sorted(manifests)}, expected {sorted(WINGET_REQUIRED)}")
    installer = manifests["installer"]
    (one,) = installer["Installers"]
    name = url_archive(one["InstallerUrl"], sums)
    if one["InstallerSha256"].lower() != sums[name] or one["Architecture"] != "x64":
        fail(f"winget: {name}: InstallerSha256 {one['InstallerSha256']} is not SHA256SUMS's")
    if (installer["InstallerType"], installer["NestedInstallerType"]) != ("zip", "portable"):
        fail("winget: not a zip holding a portable exe")
    members = set(member_names(dist / name))
    for nested in installer["NestedInstallerFiles"]:
        if nested["RelativeFilePath"].replace("\\", "/") not in members or nested["PortableCommandAlias"] != "kubecred":
            fail(f"winget: {nested} does not name the zip's kubecred.exe as kubecred")
    passed("winget manifests: schema 1.6.0 fields, the zip's checksum, its kubecred.exe")


def main():
    dist = Path(sys.argv[1]).resolve()
    print(f"==> the release in {dist} as users meet it", file=sys.stderr)
    sums = read_sums(dist)
    with tempfile.TemporaryDirectory(prefix="kubecred-archive-test-") as scratch:
        work = Path(scratch)
        archives = [name for name in sums if name.endswith((".tar.gz", ".zip"))]
        unpacked = {name: check_archive(dist, name, work) for name in archives}
        for name in archives:
            check_contents(dist, sums, name, unpacked[name])
        home, path = check_install_line(dist, work)
        check_completions_block(home, path)
        check_krew(dist, sums, work)
        linux = release_files.archive_name(VERSION, "x86_64-unknown-linux-musl")
        check_formula(dist, sums, unpacked[linux], work)
        if (dist / "kubecred.json").exists():
            check_scoop(dist, sums)
            check_winget(dist, sums)
    print("==> the archives and manifests pass", file=sys.stderr)


if __name__ == "__main__":
    main()

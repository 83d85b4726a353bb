#!/usr/bin/env bash
# Rebuilds a release, or any commit, in a fresh checkout of its own and compares what it built
# with a SHA256SUMS: the release's (downloaded from GitHub for a tag, or a file you verified
# first; docs/verify.md), or another build's (CI compares two checkouts at different paths).
#   scripts/reproduce.sh v0.2.0                       the release v0.2.0 of GITHUB_REPOSITORY
#                                                     (default: this checkout's origin on GitHub)
#   scripts/reproduce.sh v0.2.0 ~/Downloads/SHA256SUMS
#   scripts/reproduce.sh HEAD dist/SHA256SUMS         this commit, against scripts/release.sh's
# The checkout is a clone of this repository at the commit, in a new directory (another path
# than any other build's), and builds with its own scripts/release.sh and target directory: every
# target this machine builds (not macOS: see docs/verify.md) whose files the SHA256SUMS lists.
# A tag is built with the Rust version it pins (Cargo.toml's package.metadata.release; rustup
# installs it when missing). Each archive and SBOM is reported equal or different; for a
# different archive, the members that differ, and with diffoscope installed (Debian's
# diffoscope-minimal) its report, for a SHA256SUMS with the other build's files beside it; the
# work directory is then kept.
# Exit status: 0 when every file rebuilt here matches, 1 otherwise.
# Env: KUBECRED_REPRODUCE_DIR: the directory to build in (default: a new temporary one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
usage="usage: scripts/reproduce.sh TAG|COMMIT [SHA256SUMS]"
ref=${1:?$usage}
[ $# -le 2 ] || { echo "$usage" >&2; exit 2; }
fail() { echo "reproduce: $*" >&2; exit 1; }

commit=$(git rev-parse --verify --quiet "$ref^{commit}") \
    || fail "$ref is not a commit or tag of this repository (git fetch --tags first?)"
tag=""
git rev-parse --verify --quiet "refs/tags/$ref" > /dev/null && tag=$ref
if [ -z "${GITHUB_REPOSITORY:-}" ]; then
    origin=$(git remote get-url origin 2> /dev/null || true)
    if [[ $origin =~ github\.com[:/]([^/]+/[^/]+)$ ]]; then
        GITHUB_REPOSITORY=${BASH_REMATCH[1]%.git}
    fi
fi
# The archives' README links name the repository: a rebuild must name the release's.
export GITHUB_REPOSITORY=${GITHUB_REPOSITORY:-kubecred/kubecred}

work=${KUBECRED_REPRODUCE_DIR:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd -P)
expected="$work/SHA256SUMS.expected"
if [ $# -eq 2 ]; then
    cp "$2" "$expected"
elif [ -n "$tag" ]; then
    url="https://github.com/$GITHUB_REPOSITORY/releases/download/$tag/SHA256SUMS"
    echo "==> $url" >&2
    curl -fsSL --max-time 60 -o "$expected" "$url" || fail "cannot download $url; give the SHA256SUMS file as the second argument"
else
    fail "$ref is not a tag: give the SHA256SUMS to compare with as the second argument"
fi

checkout="$work/kubecred"
# A checkout of the commit left by an earlier run in KUBECRED_REPRODUCE_DIR is built again (its
# build is then only checked); anything else there is replaced by a fresh one.
if [ "$(git -C "$checkout" rev-parse HEAD 2> /dev/null)" = "$commit" ] \
    && [ -z "$(git -C "$checkout" status --porcelain --untracked-files=no)" ]; then
    echo "==> the checkout of $commit in $checkout, again" >&2
else
    echo "==> a fresh checkout of $commit in $checkout" >&2
    rm -rf "$checkout"
    git clone --quiet --no-checkout "$root" "$checkout"
    git -C "$checkout" checkout --quiet --detach "$commit"
fi

# The targets to rebuild: those of this machine's release whose files the SHA256SUMS lists.
version=$(python3 "$checkout/scripts/release_files.py" version)
targets=()
for target in x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-pc-windows-gnu; do
    grep -q " kubecred-$version-$target\." "$expected" && targets+=("$target")
done
[ ${#targets[@]} -gt 0 ] || fail "the SHA256SUMS lists no archive of kubecred $version that this machine builds"

# A tag is built as the release workflow built it: with RELEASE_TAG, which makes release.sh
# insist on the pinned Rust, and with that Rust.
env=()
if [ -n "$tag" ]; then
    want=$(python3 "$checkout/scripts/release_files.py" toolchain)
    if [ "$(rustc -V | cut -d' ' -f2)" != "$want" ]; then
        rustup toolchain list | grep -q "^$want-" || rustup toolchain install "$want" --profile minimal >&2
        env+=("RUSTUP_TOOLCHAIN=$want")
    fi
    env+=("RELEASE_TAG=$tag")
fi
echo "==> building ${targets[*]} in $checkout" >&2
(cd "$checkout" && env ${env[@]+"${env[@]}"} bash scripts/release.sh "${targets[@]}")

# Compare: every archive and SBOM built here against the expected line.
given=${2:+$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")}
status=0
python3 - "$expected" "$checkout/dist" "$work" ${given:+"$given"} << 'PY' || status=$?
import hashlib, subprocess, shutil, sys, tarfile, zipfile
from pathlib import Path

expected_path, dist, work = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
expected_path_given = Path(sys.argv[4]) if len(sys.argv) > 4 else expected_path
expected = {}
for line in expected_path.read_text().splitlines():
    digest, name = line.split()
    expected[name.lstrip("*")] = digest

def members(path):
    """{name: bytes} of an archive's members (mode and time included in the key's value)."""
    out = {}
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                out[info.filename] = (info.external_attr, info.date_time, z.read(info))
    else:
        with tarfile.open(path) as t:
            for m in t.getmembers():
                data = t.extractfile(m).read() if m.isfile() else b""
                out[m.name] = (m.mode, m.mtime, m.uid, m.gid, m.uname, m.gname, data)
    return out

built = sorted(p.name for p in dist.iterdir() if p.name.endswith((".tar.gz", ".zip", ".cdx.json")))
different = []
for name in built:
    digest = hashlib.sha256((dist / name).read_bytes()).hexdigest()
    if name not in expected:
        print(f"    {name}: not in the SHA256SUMS given (built here: {digest})", file=sys.stderr)
        different.append(name)
    elif expected[name] == digest:
        print(f"    {name}: identical ({digest})", file=sys.stderr)
    else:
        print(f"    {name}: DIFFERENT: {digest} here, {expected[name]} expected", file=sys.stderr)
        different.append(name)
for name in sorted(set(expected) - set(built)):
    print(f"    {name}: not rebuilt here", file=sys.stderr)
for name in different:
    # Beside the SHA256SUMS given (another build's dist/): which members differ, and how.
    other = expected_path_given.parent / name
    if name not in expected or not other.is_file() or name.endswith(".cdx.json"):
        continue
    ours, theirs = members(dist / name), members(other)
    names = sorted(n for n in set(ours) | set(theirs) if ours.get(n) != theirs.get(n))
    print(f"    {name}: members that differ: {', '.join(names)}", file=sys.stderr)
    if shutil.which("diffoscope"):
        report = work / f"{name}.diffoscope.txt"
        subprocess.run(["diffoscope", "--text", str(report), str(other), str(dist / name)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"    {name}: diffoscope's report: {report}", file=sys.stderr)
if different:
    print(f"reproduce: {len(different)} file(s) differ; the rebuilt ones are in {dist}", file=sys.stderr)
    print("  compare a released archive with its rebuild: diffoscope RELEASED REBUILT", file=sys.stderr)
    print("  (Debian's diffoscope-minimal)", file=sys.stderr)
    sys.exit(1)
print(f"reproduce: all {len(built)} files rebuilt here are identical", file=sys.stderr)
PY
# The checkout and its target directory take gigabytes: kept only to look at a difference, or
# when asked for.
if [ $status = 0 ] && [ -z "${KUBECRED_REPRODUCE_DIR:-}" ]; then
    rm -rf "$work"
fi
exit $status

#!/usr/bin/env bash
# How the static Linux binary is built, weighed on the cache hit: the release build (linked at a
# fixed address, .cargo/config.toml) beside the simple alternatives, each built from this tree
# with one thing changed — static-pie (rustc's default for musl), static-pie with packed
# relative relocations (DT_RELR), opt-level "s", thin LTO with 16 codegen units, panic=unwind,
# musl's own allocator instead of the startup arena (src/process/startup_arena.rs) —
# and the floor (bench/readfile.rs) linked both ways. For each: the hit's time side by side
# (hyperfine -N in rounds, ratios to the floor taken inside each round), its minor page faults
# (/usr/bin/time), its instructions (callgrind, when valgrind is installed), the binary's size
# and the relative relocations it applies at start (readelf).
# Writes bench/linking.md, which bench/run.sh puts into bench/RESULTS.md. Each variant builds in
# target/bench-linking/<variant> (a full release build each: most of an hour on 2 cores the
# first time). Usage: bench/linking.sh [--quick]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. bench/lib.sh

rounds_n=12 runs=100
[ "${1:-}" = --quick ] && rounds_n=2 runs=30
ensure_system_deps
ensure_node_deps "$root"
target=$(static_target)
ensure_rust_target "$target"

# variant SLUG RUSTFLAGS [VAR=VALUE...]: builds the release binary with these flags (RUSTFLAGS
# replaces .cargo/config.toml's) and cargo profile variables; prints its path.
variant() {
    local slug=$1 flags=$2
    shift 2
    echo "==> building: $slug" >&2
    env RUSTFLAGS="$flags" CARGO_TARGET_DIR="$root/target/bench-linking/$slug" "$@" \
        nice -n 10 cargo build --quiet --release --locked --target "$target" >&2
    echo "$root/target/bench-linking/$slug/$target/release/kubecred"
}

fixed="-C relocation-model=static"
pie="-C relocation-model=pic"
names=() binaries=()
names+=("release: fixed address") binaries+=("$(build_static "$root")")
names+=("static-pie") binaries+=("$(variant static-pie "$pie")")
names+=("static-pie, DT_RELR") binaries+=("$(variant static-pie-relr "$pie -C link-arg=-Wl,-z,pack-relative-relocs")")
names+=("fixed, opt-level s") binaries+=("$(variant opt-s "$fixed" CARGO_PROFILE_RELEASE_OPT_LEVEL=s)")
names+=("fixed, thin LTO, 16 codegen units") binaries+=("$(variant thin-lto "$fixed" CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16)")
names+=("fixed, panic=unwind") binaries+=("$(variant unwind "$fixed" CARGO_PROFILE_RELEASE_PANIC=unwind)")
names+=("fixed, musl's allocator (no arena)") binaries+=("$(variant system-allocator "$fixed --cfg kubecred_system_allocator")")

work=$(mktemp -d)
cleanup() { stop_testbed 2> /dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
floor="$work/readfile"
build_floor "$floor"
# The floor as rustc links it for musl by default (static-pie).
floor_pie="$work/readfile-pie"
rustc --edition 2024 --target "$target" -C opt-level=3 -C codegen-units=1 -C panic=abort \
    -C strip=symbols -C target-feature=+crt-static -o "$floor_pie" bench/readfile.rs

export KUBERNETES_EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}'
export KUBECRED_CLIENT_SECRET=testbed-cc-secret
hit_cache "$work" "${binaries[0]}"

echo "==> the hit, $rounds_n rounds" >&2
commands=("the floor" "$floor $HIT_ENTRY" "the floor, static-pie" "$floor_pie $HIT_ENTRY")
for i in "${!names[@]}"; do commands+=("${names[$i]}" "${binaries[$i]} ${HIT_ARGS[*]}"); done
commands+=(cat "cat $HIT_ENTRY")
rounds "$work/hit" "$rounds_n" "$runs" "${commands[@]}"
table=$(summarize "$work/hit" "the floor")

# One row per binary: page faults, instructions, size, relocations.
details="| binary | minor page faults | instructions | size | relative relocations |
|---|---:|---:|---:|---:|"
detail_row() { # NAME BINARY ARGS...
    local name=$1 binary=$2 refs="–"
    shift 2
    if command -v valgrind > /dev/null; then
        refs=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$binary" "$@" 2>&1 > /dev/null |
            sed -n 's/.*Collected : //p')
    fi
    details+="
| $name | $(minor_faults "$binary" "$@") | $refs | $(stat -c %s "$binary") | $(relative_relocations "$binary") |"
}
detail_row "the floor" "$floor" "$HIT_ENTRY"
detail_row "the floor, static-pie" "$floor_pie" "$HIT_ENTRY"
for i in "${!names[@]}"; do detail_row "${names[$i]}" "${binaries[$i]}" "${HIT_ARGS[@]}"; done

cat > bench/linking.md <<MD
Written by \`bench/linking.sh\` on $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD)$(git diff --quiet -- . ':!bench/*.md' || echo ' (with uncommitted changes)'); $(nproc) cores, $(uname -sr).
Each kubecred below is this tree's release build with one thing changed; the first is what
scripts/static-build.sh builds. A cache hit, $rounds_n rounds × $runs runs (hyperfine -N), the
ratio to the floor taken inside each round:

$table

$details
MD
echo "==> wrote bench/linking.md" >&2
cat bench/linking.md

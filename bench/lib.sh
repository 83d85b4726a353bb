# Sourced by the benchmarks: the test bed (a real OpenID Provider and the HTTPS API stand-in, on
# loopback), hyperfine in rounds, and the numbers.
#
# Why rounds: these machines are shared and noisy, and a run of one command after another drifts
# with them. Each round runs every command (hyperfine -N), in a rotated order; a ratio is taken
# within each round, and the median over the rounds is what is reported.

bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# ensure_system_deps (hyperfine, time, ...), ensure_node_deps (the test bed's packages), and
# static_target and build_static: the static build is what the benchmarks measure.
. "$bench_root/scripts/system-deps.sh"
. "$bench_root/scripts/node-deps.sh"
. "$bench_root/scripts/static-build.sh"

# start_testbed WORKDIR [OPTIONS_JSON]: starts tests/support/testbed.mjs; sets BED_PID and
# BED_FIELDS (the path of its startup line). It stops when this shell closes fd 3 or exits.
start_testbed() {
    local work=$1 options=${2:-"{}"}
    mkfifo "$work/bed.stdin"
    node "$bench_root/tests/support/testbed.mjs" "$options" < "$work/bed.stdin" > "$work/bed.json" 2> "$work/bed.log" &
    BED_PID=$!
    exec 3> "$work/bed.stdin"
    BED_FIELDS="$work/bed.json"
    for _ in $(seq 150); do [ -s "$BED_FIELDS" ] && return 0; sleep 0.1; done
    echo "bench: the test bed did not start:" >&2
    cat "$work/bed.log" >&2
    return 1
}

stop_testbed() {
    exec 3>&-
    [ -n "${BED_PID:-}" ] && { kill "$BED_PID" 2>/dev/null || true; wait "$BED_PID" 2>/dev/null || true; }
    BED_PID=""
}

# bed_field NAME: a field of the test bed's startup line.
bed_field() {
    python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())[sys.argv[2]])' "$BED_FIELDS" "$1"
}

# bed_admin METHOD PATH [JSON]: the test bed's admin API (stats, reset, config).
bed_admin() {
    local admin
    admin=$(bed_field admin)
    curl -sS --fail --max-time 10 --cacert "$(bed_field ca_file)" -X "$1" \
        -H 'content-type: application/json' ${3:+--data "$3"} "$admin$2"
}

# rounds OUT_PREFIX ROUNDS RUNS NAME1 CMD1 NAME2 CMD2 ...: hyperfine -N, ROUNDS times, the
# commands' order rotated each round; writes OUT_PREFIX.N.json.
rounds() {
    local prefix=$1 count=$2 runs=$3
    shift 3
    local names=() commands=()
    while [ $# -gt 0 ]; do names+=("$1"); commands+=("$2"); shift 2; done
    local n=${#names[@]} round i j args
    for ((round = 0; round < count; round++)); do
        args=(-N --warmup 20 --runs "$runs" --export-json "$prefix.$round.json")
        for ((i = 0; i < n; i++)); do
            j=$(((i + round) % n))
            args+=(-n "${names[$j]}" "${commands[$j]}")
        done
        hyperfine "${args[@]}" > /dev/null 2>&1 || {
            echo "bench: hyperfine failed; the commands were:" >&2
            printf '  %s\n' "${commands[@]}" >&2
            return 1
        }
    done
}

# summarize OUT_PREFIX BASELINE_NAME [OTHER_BASELINE_NAME]: a markdown table of medians (the
# median over the rounds of each round's median) and each command's ratio to BASELINE_NAME (the
# median over the rounds of the per-round ratio, with its lowest and highest round), and to
# OTHER_BASELINE_NAME in a second column when it is given.
summarize() {
    python3 "$bench_root/bench/summarize.py" "$@"
}

# build_floor OUT: the floor of a cache hit, bench/readfile.rs (read a file, write it to
# stdout), built static for the musl target with the release profile's settings and linked as
# the static kubecred is (.cargo/config.toml: at a fixed address). Plain rustc, so the flags are
# all here.
build_floor() {
    rustc --edition 2024 --target "$(static_target)" -C opt-level=3 -C codegen-units=1 \
        -C panic=abort -C strip=symbols -C target-feature=+crt-static -C relocation-model=static \
        -o "$1" "$bench_root/bench/readfile.rs"
}

# hit_cache WORK KUBECRED: a client-credentials entry under WORK/cache that outlives the
# benchmark, obtained from the test bed, which is stopped again, so that every run of KUBECRED
# with HIT_ARGS is a cache hit with no provider to fall back on. Sets HIT_ARGS (the get-token
# command line) and HIT_ENTRY (the entry's file). Needs KUBECRED_CLIENT_SECRET and
# KUBERNETES_EXEC_INFO exported.
hit_cache() {
    local work=$1 kubecred=$2
    start_testbed "$work" '{"clientCredentialsTtl": 86400, "accessTokenTtl": 86400, "idTokenTtl": 86400}'
    HIT_ARGS=(get-token "--issuer-url=$(bed_field issuer)" --client-id=kubecred-cc
        --grant-type=client-credentials --resource=https://kubernetes.testbed "--cache-dir=$work/cache")
    "$kubecred" "${HIT_ARGS[@]}" > /dev/null
    stop_testbed
    "$kubecred" "${HIT_ARGS[@]}" > /dev/null || {
        echo "bench: the cache hit failed with the provider stopped" >&2
        return 1
    }
    HIT_ENTRY=$(ls "$work"/cache/tokens/*.json)
}

# relative_relocations BINARY: how many pointers BINARY's start-up code or loader relocates at
# every start, from readelf (binutils): R_*_RELATIVE entries, or the offsets of a packed
# (DT_RELR) table; "?" without readelf.
relative_relocations() {
    command -v readelf > /dev/null || { echo "?"; return; }
    readelf -r -W "$1" | awk '/_RELATIVE / { n++ } /^ *[0-9]+ offsets$/ { n += $1 } END { print n + 0 }'
}

# minor_faults COMMAND...: the median over 21 runs of the minor page faults of COMMAND (stdout
# discarded), as /usr/bin/time counts them.
minor_faults() {
    local i
    for i in $(seq 21); do
        /usr/bin/time -f %R "$@" 2>&1 > /dev/null | tail -1
    done | sort -n | sed -n 11p
}

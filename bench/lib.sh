# Sourced by the benchmarks: the test bed (a real OpenID Provider and the HTTPS API stand-in, on
# loopback), hyperfine in rounds, and the numbers.
#
# Why rounds: these machines are shared and noisy, and a run of one command after another drifts
# with them. Each round runs every command (hyperfine -N), in a rotated order; a ratio is taken
# within each round, and the median over the rounds is what is reported.

bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

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

# summarize OUT_PREFIX BASELINE_NAME: a markdown table of medians (the median over the rounds
# of each round's median) and each command's ratio to BASELINE_NAME (the median over the rounds
# of the per-round ratio, with its lowest and highest round).
summarize() {
    python3 "$bench_root/bench/summarize.py" "$1" "$2"
}

#!/usr/bin/env bash
# Runs kubecred's fuzz targets (fuzz/, cargo-fuzz on the nightly toolchain), each for a set time.
#
#   scripts/fuzz.sh                 every target, 60 s each
#   scripts/fuzz.sh TARGET [SECS]   one target (names: ls fuzz/fuzz_targets)
#   scripts/fuzz.sh all SECS        every target, SECS each
#   scripts/fuzz.sh minimize        shrink fuzz/corpus/* to inputs that add coverage (cargo fuzz cmin)
#
# New inputs go to fuzz/work/<target>/ (not committed), seeded from the committed corpus in
# fuzz/corpus/<target>/, which the unit tests of src/fuzzing.rs replay on stable. A crash leaves its
# input in fuzz/artifacts/<target>/ and fails the script; add that input to the corpus with the
# fix. A summary line per target (executions, corpus size, crashes) ends the output.
# Needs: rustup's nightly toolchain and cargo-fuzz (installed here if absent).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked
fi

targets=$(ls fuzz_targets | sed 's/\.rs$//')
target=${1:-all}
seconds=${2:-60}

if [[ $target == minimize ]]; then
  for t in $targets; do
    cargo +nightly fuzz cmin "$t" "corpus/$t" >/dev/null 2>&1
    echo "$t: $(ls "corpus/$t" | wc -l) corpus files"
  done
  exit 0
fi
if [[ $target != all ]]; then
  grep -qx "$target" <<<"$targets" || { echo "fuzz.sh: no target $target (have: $(echo $targets))" >&2; exit 2; }
  targets=$target
fi

cargo +nightly fuzz build >&2
status=0
summary=()
for t in $targets; do
  mkdir -p "work/$t" "corpus/$t"
  log="work/$t.log"
  if cargo +nightly fuzz run "$t" "work/$t" "corpus/$t" -- \
      -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    crashes=0
  else
    crashes=$(ls "artifacts/$t" 2>/dev/null | wc -l)
    status=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  summary+=("$t: ${execs:-?} executions in ${seconds}s, $(ls "work/$t" | wc -l) inputs in work/, crashes: $crashes")
done
printf '%s\n' "${summary[@]}"
exit $status

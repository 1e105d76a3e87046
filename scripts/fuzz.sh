#!/usr/bin/env bash
# Fuzz every target in fuzz/ for SECONDS each (default 60) at the lowest CPU priority, from a seed
# corpus made from the fixtures (scripts/fuzz_seeds.py) plus whatever fuzz/corpus/ already holds.
# A crasher lands in fuzz/artifacts/TARGET/; keep each as a regression test (tests/hostile.rs)
# once fixed. Prints, per target, the executions and coverage libFuzzer reports, also to
# fuzz/stats.txt.
#
#   scripts/fuzz.sh SECONDS [FORKS]      FORKS libFuzzer processes per target (-fork=N), default 1
#   PARALLEL=1 scripts/fuzz.sh …         all targets at once (a many-core machine), not in turn
#   FUZZ_BIN=DIR scripts/fuzz.sh …       run binaries already built (`cargo +nightly fuzz build
#                                         -O -a -s none`), for a machine without a Rust toolchain
#   TARGETS="core_parse core_text" …     a subset
#
# Without FUZZ_BIN it builds through cargo-fuzz (installed when missing; needs nightly).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
forks=${2:-1}
python3 scripts/fuzz_seeds.py
if [ -n "${FUZZ_BIN:-}" ]; then
  targets=${TARGETS:-$(ls "$FUZZ_BIN")}
else
  command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
  targets=${TARGETS:-$(cargo +nightly fuzz list)}
fi
: >fuzz/stats.txt

one() {
  local t=$1 log rc=0
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  log="fuzz/artifacts/$t/last-run.log"
  local args=(-max_total_time="$secs" -rss_limit_mb=2048 -max_len=1048576 -timeout=60
    -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/")
  [ "$forks" -gt 1 ] && args+=(-fork="$forks")
  if [ -n "${FUZZ_BIN:-}" ]; then
    nice -n 19 "$FUZZ_BIN/$t" "fuzz/corpus/$t" "${args[@]}" >"$log" 2>&1 || rc=$?
  else
    nice -n 19 cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- "${args[@]}" >"$log" 2>&1 || rc=$?
  fi
  # The last status line: `#N  DONE cov: …` (one process) or `#N: cov: … crash: a/b/c …` (forks).
  local last runs cov fails
  last=$(grep -E '^#[0-9]+:? ' "$log" | tail -n 1 || true)
  runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -n 1 || true)
  [ -z "$runs" ] && runs=$(echo "$last" | grep -oE '^#[0-9]+' | tr -d '#' || true)
  cov=$(echo "$last" | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
  fails=$(echo "$last" | grep -oE 'oom/timeout/crash: [0-9/]+' || true)
  echo "$t: ${secs}s x ${forks} process(es), ${runs:-?} executions, ${cov:-cov ?}${fails:+, $fails}, exit $rc" |
    tee -a fuzz/stats.txt
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "$log"
  fi
}

if [ -n "${PARALLEL:-}" ]; then
  for t in $targets; do one "$t" & done
  wait
else
  for t in $targets; do one "$t"; done
fi

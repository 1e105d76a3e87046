#!/usr/bin/env bash
# Fuzz every target in fuzz/ for SECONDS each (default 60), one at a time, at the lowest CPU
# priority, from a seed corpus made from the fixtures (scripts/fuzz_seeds.py). Installs
# cargo-fuzz when missing (needs the nightly toolchain). A crasher lands in
# fuzz/artifacts/TARGET/; keep each as a regression test (tests/hostile.rs) once fixed.
# Prints, per target, libFuzzer's final line (executions, coverage) to fuzz/stats.txt too.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
python3 scripts/fuzz_seeds.py
: >fuzz/stats.txt
for t in $(cargo +nightly fuzz list); do
  mkdir -p "fuzz/corpus/$t"
  log=$(mktemp)
  rc=0
  nice -n 19 cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -max_len=1048576 -print_final_stats=1 \
    >"$log" 2>&1 || rc=$?
  runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' || true)
  cov=$(grep -E '#[0-9]+ +(DONE|pulse|NEW|REDUCE).*cov:' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
  echo "$t: ${secs}s, ${runs:-?} executions, ${cov:-cov ?}, exit $rc" | tee -a fuzz/stats.txt
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "$log"
  fi
  rm -f "$log"
done

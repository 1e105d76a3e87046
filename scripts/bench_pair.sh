#!/usr/bin/env bash
# Two trainwreck builds side by side against ripgrep on the 1 GB generated dir (README,
# "Performance"): generate it, warm the page cache, alternate the three commands pinned to two
# cores (scripts/bench_compare.py), then peak RSS with one thread and start-up on a one-line
# input. Meant for a quiet many-core machine; needs python3, taskset and scripts/gen_logs.py
# (or GEN=path).
#
#   [CPUS=2,3] scripts/bench_pair.sh OLD_BINARY NEW_BINARY [RG_BINARY]   (the corpus goes under ${TW_BENCH_DIR:-/tmp})
set -euo pipefail
old=$1 new=$2 rg=${3:-rg}
gen=${GEN:-$(dirname "$0")/gen_logs.py}
dir=${TW_BENCH_DIR:-/tmp}/g1
nproc; grep -m1 "model name" /proc/cpuinfo || true
[ -d "$dir" ] || python3 "$gen" --out "$dir" --size-mb 1000 --ranks 64 --seed 1 --jobs "$(nproc)" >/dev/null
find "$dir" -type f -exec cat {} + >/dev/null
python3 "$(dirname "$0")/bench_compare.py" "$dir" 12 before="$old" now="$new" --rg "$rg" --cpus "${CPUS:-2,3}"
echo "## peak RSS with one thread (MiB), three runs each"
for b in "$old" "$new"; do
  for _ in 1 2 3; do
    taskset -c "${CPUS:-2,3}" python3 -c "
import os, subprocess, sys
p = subprocess.Popen([sys.argv[1], 'analyze', sys.argv[2], '--format', 'json', '--threads', '1'], stdout=subprocess.DEVNULL)
_, _, ru = os.wait4(p.pid, 0); print(sys.argv[1], round(ru.ru_maxrss / 1024, 1))" "$b" "$dir"
  done
done
echo "## start-up on a one-line input (ms, median of 30 after one warm-up)"
tiny=$(mktemp --suffix=.log); echo "[rank0]: hello" >"$tiny"
for b in "$old" "$new"; do
  taskset -c "${CPUS:-2,3}" python3 - "$b" "$tiny" <<'PY'
import statistics, subprocess, sys, time
t = []
for _ in range(31):
    t0 = time.perf_counter()
    subprocess.run([sys.argv[1], "analyze", sys.argv[2]], stdout=subprocess.DEVNULL)
    t.append(time.perf_counter() - t0)
print(sys.argv[1], f"{statistics.median(t[1:]) * 1000:.1f} ms")
PY
done
rm -f "$tiny"

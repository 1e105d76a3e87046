#!/usr/bin/env bash
# Two trainwreck builds side by side against ripgrep on the 1 GB generated dir (docs/performance.md,
# its reproduce section): generate it, warm the page cache, alternate the three commands pinned to two
# cores (scripts/bench_compare.py), then peak RSS with one thread and start-up on a one-line
# input. Meant for a quiet many-core machine; needs python3, taskset and scripts/gen_logs.py
# (or GEN=path).
#
#   [CPUS=2,3] scripts/bench_pair.sh OLD_BINARY NEW_BINARY [RG_BINARY]   (the corpus goes under ${TW_BENCH_DIR:-/tmp})
#
# Then the knowledge base grown: for each N in KB (default "1000 5000"), a local rule set of N
# generated signatures (scripts/gen_rules.py: the shapes built-in rules have, made-up literals)
# loaded with `--rules`, the same three figures, and ripgrep given the same patterns. KB="" skips it.
# Then a thread sweep: for each T in THREADS (default none, e.g. "1 2 4 8 16"), both builds with
# `--threads T` and ripgrep with `-j T`, pinned to the first T CPUs of SWEEP_CPUS (default all).
# SIZE_MB (default 1000) sets the generated corpus's size (4000 for the 4 GB sweep); each size has
# its own directory, g1 for 1000 and g<SIZE_MB>m otherwise. ONLY_SWEEP=1 runs the thread sweep
# alone (no two-core comparison, RSS or start-up; set KB="" too). ONLY_STARTUP=1 measures the
# start-up rows alone, ROUNDS_STARTUP times alternated (no corpus; KB defaults to "1000").
set -euo pipefail
old=$1 new=$2 rg=${3:-rg}
gen=${GEN:-$(dirname "$0")/gen_logs.py}
size=${SIZE_MB:-1000}
if [ "$size" = 1000 ]; then dir=${TW_BENCH_DIR:-/tmp}/g1; else dir=${TW_BENCH_DIR:-/tmp}/g${size}m; fi
nproc; grep -m1 "model name" /proc/cpuinfo || true
if [ "${ONLY_STARTUP:-0}" != 1 ]; then
[ -d "$dir" ] || python3 "$gen" --out "$dir" --size-mb "$size" --ranks 64 --seed 1 --jobs "$(nproc)" >/dev/null
find "$dir" -type f -exec cat {} + >/dev/null
fi
if [ "${ONLY_SWEEP:-0}" != 1 ] && [ "${ONLY_STARTUP:-0}" != 1 ]; then
python3 "$(dirname "$0")/bench_compare.py" "$dir" 12 before="$old" now="$new" --rg "$rg" --cpus "${CPUS:-2,3}"
fi
rss() { # BINARY [ARGS...]: peak RSS of one-thread analyses of the corpus, three runs
  for _ in 1 2 3; do
    taskset -c "${CPUS:-2,3}" python3 -c "
import os, subprocess, sys
p = subprocess.Popen([sys.argv[1], 'analyze', sys.argv[2], '--format', 'json', '--threads', '1'] + sys.argv[3:], stdout=subprocess.DEVNULL)
_, _, ru = os.wait4(p.pid, 0); print(sys.argv[1], *sys.argv[3:], round(ru.ru_maxrss / 1024, 1))" "$1" "$dir" "${@:2}"
  done
}
startup() { # BINARY [ARGS...]: median wall of 30 analyses of a one-line input, after one warm-up
  taskset -c "${CPUS:-2,3}" python3 - "$tiny" "$@" <<'PY'
import statistics, subprocess, sys, time
t = []
for _ in range(31):
    t0 = time.perf_counter()
    subprocess.run([sys.argv[2], "analyze", sys.argv[1]] + sys.argv[3:], stdout=subprocess.DEVNULL)
    t.append(time.perf_counter() - t0)
print(*sys.argv[2:], f"{statistics.median(t[1:]) * 1000:.1f} ms")
PY
}
tiny=$(mktemp --suffix=.log); echo "[rank0]: hello" >"$tiny"
trap 'rm -f "$tiny"' EXIT
if [ "${ONLY_STARTUP:-0}" = 1 ]; then
  # Start-up alone, the two builds alternated ROUNDS_STARTUP times (default 3), built-in only
  # and with each KB's generated signatures: no corpus is generated.
  for r in $(seq "${ROUNDS_STARTUP:-3}"); do
    echo "## start-up round $r (ms, median of 30 after one warm-up)"
    for b in "$old" "$new"; do startup "$b"; done
    for n in ${KB-1000}; do
      kb=${TW_BENCH_DIR:-/tmp}/kb$n
      [ -d "$kb" ] || python3 "$(dirname "$0")/gen_rules.py" --out "$kb" --signatures "$n" >/dev/null
      for b in "$old" "$new"; do startup "$b" --rules "$kb"; done
    done
  done
  exit 0
fi
if [ "${ONLY_SWEEP:-0}" != 1 ]; then
  echo "## peak RSS with one thread (MiB), three runs each"
  for b in "$old" "$new"; do rss "$b"; done
  echo "## start-up on a one-line input (ms, median of 30 after one warm-up)"
  for b in "$old" "$new"; do startup "$b"; done
fi

for n in ${KB-1000 5000}; do
  kb=${TW_BENCH_DIR:-/tmp}/kb$n
  [ -d "$kb" ] || python3 "$(dirname "$0")/gen_rules.py" --out "$kb" --signatures "$n" >/dev/null
  echo "## +$n generated signatures (--rules $kb)"
  python3 "$(dirname "$0")/bench_compare.py" "$dir" "${ROUNDS_KB:-6}" before="$old" now="$new" \
    --rg "$rg" --cpus "${CPUS:-2,3}" --rules "$kb"
  for b in "$old" "$new"; do rss "$b" --rules "$kb"; done
  for b in "$old" "$new"; do startup "$b" --rules "$kb"; done
done

all=$(seq -s, 0 $(($(nproc) - 1)))
for t in ${THREADS-}; do
  cpus=$(echo "${SWEEP_CPUS:-$all}" | cut -d, -f1-"$t")
  echo "## $t threads on CPUs $cpus"
  python3 "$(dirname "$0")/bench_compare.py" "$dir" "${ROUNDS_SWEEP:-6}" before="$old" now="$new" \
    --rg "$rg" --cpus "$cpus" --threads "$t"
done

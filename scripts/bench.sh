#!/usr/bin/env bash
# trainwreck vs ripgrep on gen_logs.py corpora (docs/performance.md).
#
#   scripts/bench.sh                 # 1 GB set only, 10 runs
#   SETS="1g 4g single" RUNS=10 scripts/bench.sh
#
# Env: TW_BENCH_DIR (corpora, default /tmp/twbench), SETS (1g 4g single), RUNS (10),
#      RG (the ripgrep binary, default rg), CARGO_TARGET_DIR (build).
#      Needs ripgrep, hyperfine, GNU time, python3.
# Prints, per corpus: ratio trainwreck/rg (median, min–max), MB/s, 1 vs 2 threads, peak RSS,
# the load average, and two checks: per-file matching-line counts equal rg's, and every
# planted line of the manifest that a rule covers is cited as evidence.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${TW_BENCH_DIR:-/tmp/twbench}
SETS=${SETS:-1g}
RUNS=${RUNS:-10}
GEN=${GEN:-$(dirname "$0")/gen_logs.py}
mkdir -p "$DIR"
echo "# disk: $(df -h --output=avail "$DIR" | tail -1) free under $DIR"
cargo build --release --quiet
TW=${CARGO_TARGET_DIR:-target}/release/trainwreck
RG=${RG:-rg}
"$RG" --version | head -1
"$TW" rules patterns > "$DIR/patterns.txt"
# ripgrep's \b is Unicode-aware and has no DFA: one such pattern makes it crawl (0.4 MB/s on
# tqdm bars, issue 9). The fair baseline gives it ASCII \b, which these patterns mean.
sed -E 's/\\b/(?-u:\\b)/g' "$DIR/patterns.txt" > "$DIR/patterns-ascii.txt"

gen() { # name size ranks seed
  [ -d "$DIR/$1" ] || python3 "$GEN" --out "$DIR/$1" --size-mb "$2" --ranks "$3" --seed "$4" --jobs "$(nproc)"
}
target() {
  case $1 in
    1g) gen g1 1000 64 1; echo "$DIR/g1" ;;
    4g) gen g4 4000 256 2; echo "$DIR/g4" ;;
    single) gen g4 4000 256 2
      [ -f "$DIR/single/rank.log" ] || { mkdir -p "$DIR/single"
        find "$DIR/g4/logs" -name '*.log' | sort | xargs cat > "$DIR/single/rank.log"; }
      echo "$DIR/single/rank.log" ;;
    single1g) [ -f "$DIR/single1g/rank.log" ] || { gen g1 1000 64 1; mkdir -p "$DIR/single1g"
        find "$DIR/g1/logs" -name '*.log' | sort | xargs cat > "$DIR/single1g/rank.log"; }
      echo "$DIR/single1g/rank.log" ;;
  esac
}
ratio() { python3 - "$1" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"]
tw, rg = r[0]["times"], r[1]["times"]
q = sorted(t / g for t, g in zip(tw, rg))
print(f"  ratio trainwreck/rg: median {statistics.median(q):.3f} (min {q[0]:.3f} – max {q[-1]:.3f}); "
      f"median trainwreck {statistics.median(tw):.3f} s, rg {statistics.median(rg):.3f} s")
PY
}
for set in $SETS; do
  T=$(target "$set")
  BYTES=$(du -sb "$T" | cut -f1)
  echo "## $set: $T, $BYTES bytes; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  hyperfine -N --warmup 1 -r "$RUNS" --export-json "$DIR/$set.json" \
    "$TW analyze $T --format json" "$RG -c -f $DIR/patterns-ascii.txt $T" > /dev/null
  ratio "$DIR/$set.json"
  python3 -c "import json,statistics as s;t=s.median(json.load(open('$DIR/$set.json'))['results'][0]['times']);print(f'  trainwreck {$BYTES/t/1e6:.0f} MB/s')"
  # One thread vs two, alternated run by run (the host's load drifts between hyperfine's
  # blocks of runs; alternating exposes both to the same drift).
  python3 - "$TW" "$T" "$RUNS" <<'PY'
import statistics, subprocess, sys, time
tw, target, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = {1: [], 2: []}
for i in range(runs + 1):
    for th in (1, 2):
        t0 = time.perf_counter()
        subprocess.run([tw, "analyze", target, "--format", "json", "--threads", str(th)],
                       stdout=subprocess.DEVNULL, check=False)
        if i > 0:  # the first round warms the cache
            times[th].append(time.perf_counter() - t0)
a, b = statistics.median(times[1]), statistics.median(times[2])
print(f"  1 thread {a:.3f} s, 2 threads {b:.3f} s (medians, alternated): speed-up {a/b:.2f}x")
PY
  for th in 1 2; do
    /usr/bin/time -v "$TW" analyze "$T" --format json --threads $th 2> "$DIR/time.txt" > /dev/null
    echo "  peak RSS ($th thread(s)): $(awk '/Maximum resident/ {printf "%.1f MiB", $6/1024}' "$DIR/time.txt")"
  done
  echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ -d "$T" ]; then
    if diff <("$TW" rules scan "$T" | sed "s|^$T/||" | sort) \
            <(cd "$T" && "$RG" -c -f "$DIR/patterns-ascii.txt" . | sed 's|^\./||' | sort) > /dev/null; then
      echo "  check: per-file matching-line counts equal rg's"
    else echo "  CHECK FAILED: per-file counts differ from rg"; fi
    "$TW" analyze "$T" --format json > "$DIR/$set-report.json"
    python3 - "$T.planted.json" "$DIR/$set-report.json" "$DIR/patterns.txt" "$T" <<'PY'
import json, re, sys
m = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2]))
pats = [re.compile(p.replace(r"(?-u:\b)", r"\b")) for p in open(sys.argv[3]).read().split("\n") if p]
cited = {(e["path"], e["line"]) for f in a["findings"] for e in f.get("evidence", [])}
root = sys.argv[4]
covered = missed = uncovered = 0
for p in m["planted"]:
    line = open(f"{root}/{p['file']}", errors="replace", newline="").read().split("\n")[p["line"] - 1]
    if not any(r.search(line) for r in pats):
        uncovered += 1; continue
    if (p["file"], p["line"]) in cited: covered += 1
    else: missed += 1; print("  planted line matched but not cited:", p["file"], p["line"], p["signature"])
print(f"  planted: {covered} cited, {missed} matched-but-not-cited (evidence cap), {uncovered} with no rule yet")
PY
  fi
done
TINY=$DIR/tiny.log; echo "[rank0]: hello" > "$TINY"
echo "## start-up, whole KB, tiny input; load: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --warmup 3 -r 30 "$TW analyze $TINY" 2>&1 | grep -E "Time|Range"

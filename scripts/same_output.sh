#!/usr/bin/env bash
# Prove that a change to how trainwreck prints (a refactor of the printers, a format table)
# changes no output: run two builds and compare, byte for byte with the exit status, every
# format of every command that prints a report, over the fixtures:
#
#   scripts/same_output.sh OLD_BINARY NEW_BINARY [CASE...]   prints each difference; exit 1 if any
#
# CASE...: only these inputs for the per-case part (the triage, diff and history parts always
# run); by default every case.
#
# analyze: every case of scripts/same_json.sh (run folders, cores, pastes) in each of its
# formats, the terminal and Markdown ones in Chinese too, the terminal one with colour and with
# --timeline, JSON with --redact=all; facts: each case as a table and as JSON; triage: the
# corpus and the captured runs in each format and both languages; diff: each pair under
# fixtures/pairs in each format; history: a database filled by `analyze --record` from the
# corpus, each view in each format (recording times, which come from the clock for runs whose
# logs carry none, are masked there). Run it from anywhere; it uses the repository's fixtures.
set -uo pipefail
old=$(realpath "$1") new=$(realpath "$2")
shift 2
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
# One comparison: the same arguments to both builds (`{db}` stands for each build's own
# history database, so recording in one cannot change what the other reads).
same() {
  local args=("$@") o=() w=()
  for a in "${args[@]}"; do
    o+=("${a//\{db\}/$tmp/old.db}")
    w+=("${a//\{db\}/$tmp/new.db}")
  done
  COLUMNS=100 "$old" "${o[@]}" >"$tmp/old.out" 2>"$tmp/old.err"
  local ro=$?
  COLUMNS=100 "$new" "${w[@]}" >"$tmp/new.out" 2>"$tmp/new.err"
  local rn=$?
  sed -i "s#$tmp/old.db#DB#g" "$tmp/old.out" "$tmp/old.err"
  sed -i "s#$tmp/new.db#DB#g" "$tmp/new.out" "$tmp/new.err"
  # A run with no time in its logs is recorded at the clock's time: the two builds record a
  # second or so apart. Only where a database is used.
  if [[ "${args[*]}" == *"{db}"* ]]; then
    sed -i -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/g' "$tmp/old.out" "$tmp/new.out"
  fi
  n=$((n + 1))
  if [ "$ro" != "$rn" ] || ! cmp -s "$tmp/old.out" "$tmp/new.out" || ! cmp -s "$tmp/old.err" "$tmp/new.err"; then
    bad=$((bad + 1))
    echo "DIFFERENT: ${args[*]} (exit $ro vs $rn)"
    diff <(head -c 200000 "$tmp/old.out") <(head -c 200000 "$tmp/new.out") | head -n 20
    diff "$tmp/old.err" "$tmp/new.err" | head -n 10
  fi
}
if [ $# -gt 0 ]; then
  cases=$(printf '%s\n' "$@")
else
  cases=$( (find fixtures -mindepth 1 -type f -not -name '*.md' -printf '%h\n' | sort -u
    find fixtures/pastes -maxdepth 1 -type f) | sort -u)
fi
for c in $cases; do
  for f in table json markdown github junit; do
    same analyze "$c" --format "$f" --threads 1
  done
  same --lang zh analyze "$c" --format table --threads 1
  same --lang zh analyze "$c" --format markdown --threads 1
  same --color always analyze "$c" --format table --timeline --threads 1
  same analyze "$c" --format json --redact=all --threads 1
  same facts "$c" --format table
  same facts "$c" --format json
done
for f in table json markdown github junit; do
  for lang in en zh; do
    same --lang "$lang" triage fixtures/corpus fixtures/captured --format "$f" --threads 1
  done
done
for p in fixtures/pairs/*/; do
  for f in terminal json markdown; do
    same diff "$p/good" "$p/bad" --format "$f" --threads 1
    same --lang zh diff "$p/good" "$p/bad" --format "$f" --threads 1
  done
done
for c in fixtures/corpus/*/; do
  same analyze "$c" --format json --record --db '{db}' --job "job-$(basename "$c")" --threads 1
done
fp=$("$new" analyze fixtures/corpus/01a_dataloader_shm_deepspeed_zero2 --format json |
  sed -n 's/.*"fingerprint": "\(fp[^"]*\)".*/\1/p' | head -n 1)
for f in table json; do
  same history --db '{db}' list --format "$f"
  same history --db '{db}' show "$fp" --format "$f"
  same history --db '{db}' hosts --format "$f"
  same history --db '{db}' gpus --format "$f"
done
echo "$n outputs compared, $bad different"
[ "$bad" -eq 0 ]

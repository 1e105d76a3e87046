#!/usr/bin/env bash
# Prove that a change to how trainwreck reads (a refactor, a speed-up) changes no answer: run two
# builds over every run folder, paste and core under fixtures/ and compare their JSON reports
# byte for byte, with one thread and with two (ranges of big files are split only from two).
#
#   scripts/same_json.sh OLD_BINARY NEW_BINARY        prints each difference; exit 1 if any
#
# A case is every directory under fixtures/ that holds a file directly (a run folder, a real
# thread's case, a core's folder) and every file in fixtures/pastes/. Reports are compared as
# printed: `analyze --format json` is deterministic (no clock, no host name in it).
set -uo pipefail
old=$1 new=$2
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cases=$( (find fixtures -mindepth 1 -type f -not -name '*.md' -printf '%h\n' | sort -u
  find fixtures/pastes -maxdepth 1 -type f) | sort -u)
n=0 bad=0
for c in $cases; do
  for t in 1 2; do
    "$old" analyze "$c" --format json --threads "$t" >"$tmp/old.json" 2>"$tmp/old.err"
    ro=$?
    "$new" analyze "$c" --format json --threads "$t" >"$tmp/new.json" 2>"$tmp/new.err"
    rn=$?
    n=$((n + 1))
    if [ "$ro" != "$rn" ] || ! cmp -s "$tmp/old.json" "$tmp/new.json"; then
      bad=$((bad + 1))
      echo "DIFFERENT: $c (--threads $t; exit $ro vs $rn)"
      diff <(head -c 200000 "$tmp/old.json") <(head -c 200000 "$tmp/new.json") | head -n 20
    fi
  done
done
echo "$n reports compared, $bad different"
[ "$bad" -eq 0 ]

#!/usr/bin/env bash
# The README's screenshots (docs/img/*.png): the HTML pages of included examples — the seed
# run, the corpus's triage, the diff of the fp16 pair (fixtures/pairs/precision), and the fleet
# page of the history tests' synthetic fleet (fixed dates, so the image does not change with the
# day it is made) — rendered by headless Chromium (scripts/ci-deps.sh installs it). Run from
# anywhere: scripts/screenshots.sh. Regenerate after changing the pages.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
tw=target/release/trainwreck
out=docs/img
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tw" analyze fixtures/seed-bus-error --format html >"$tmp/run.html"
# triage exits non-zero when runs failed (they do); 2 is a usage error.
"$tw" triage fixtures/corpus --format html >"$tmp/triage.html" || [ $? -ne 2 ]
"$tw" diff fixtures/pairs/precision/good fixtures/pairs/precision/bad --format html >"$tmp/diff.html"
cargo run --release --quiet --example fleet_gen >"$tmp/fleet.jsonl"
"$tw" history import "$tmp/fleet.jsonl" --db "$tmp/fleet.db" >/dev/null
"$tw" history report --db "$tmp/fleet.db" --html >"$tmp/fleet.html"
browser=$(command -v chromium || command -v chromium-browser)
shot() { # NAME HEIGHT
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$tmp/profile" --window-size=1200,"$2" \
    --screenshot="$out/$1.png" "file://$tmp/$1.html" 2>/dev/null
}
shot run 1300
shot triage 1000
shot fleet 1700
shot diff 1700
ls -l "$out"

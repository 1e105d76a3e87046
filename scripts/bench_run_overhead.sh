#!/bin/sh
# Measure the CPU overhead of `trainwreck run` (wrapper CPU per second of run, at a 100 ms
# sampling interval) over an idle, a busy and a chatty child. TW_BENCH_SECS sets each run's length.
set -eu
cd "$(dirname "$0")/.."
exec cargo bench --bench run_overhead "$@"

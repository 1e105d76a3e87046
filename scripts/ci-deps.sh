#!/usr/bin/env bash
# Installs what the tests need beyond the Rust toolchain, from Debian's packages, when missing:
# g++ (the C++ crash helper whose core the demangling test reads) and gdb (gcore, for cores
# when the kernel's core_pattern pipes them elsewhere), binutils (objcopy/strip/readelf: the
# split-debug-file helper of tests/core_unwind.rs), chromium (tests/html.rs opens the HTML
# report in headless Chromium). Idempotent; called by .ci/run.
set -euo pipefail
need=()
command -v g++ >/dev/null || need+=(g++)
command -v gdb >/dev/null || need+=(gdb)
command -v objcopy >/dev/null || need+=(binutils)
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi

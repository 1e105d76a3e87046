#!/usr/bin/env bash
# Installs the tools that build and check the Python wheel, from PyPI, into a virtual
# environment of their own (target/wheel-tools, ignored by git): maturin (builds the wheel),
# ziglang (zig's C compiler and linker: the binary links against glibc 2.17 whatever this
# machine's glibc is) and auditwheel (checks the manylinux tag). Pinned, so every machine
# builds the same way. Idempotent; called by scripts/release.sh and .ci/run. Prints the
# environment's bin directory, for PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/wheel-tools
pins=(maturin==1.16.0 ziglang==0.17.0 auditwheel==6.8.2)
if [ ! -x "$venv/bin/python" ]; then
  # Debian's python3 has no venv (ensurepip) without its python3-venv package.
  if ! python3 -m venv "$venv" >&2; then
    rm -rf "$venv"
    command -v apt-get >/dev/null || { echo "wheel-deps: python3 cannot make a venv" >&2; exit 1; }
    echo "installing: python3-venv" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
    python3 -m venv "$venv" >&2
  fi
fi
# The pins installed last time, written after a successful install.
stamp=$venv/pins
if [ "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]; then
  echo "installing into $venv: ${pins[*]}" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check --quiet "${pins[@]}" >&2
  echo "${pins[*]}" >"$stamp"
fi
echo "$PWD/$venv/bin"

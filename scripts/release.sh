#!/usr/bin/env bash
# Builds the release files into dist/ and prints what it built:
#   trainwreck-VERSION-py3-none-manylinux_2_17_ARCH.manylinux2014_ARCH.whl  (pip install …)
#   trainwreck-VERSION-TARGET.tar.gz   the same binary, with README.md, for machines without pip
#   SHA256SUMS                          of all of them (sha256sum -c SHA256SUMS)
# Usage: scripts/release.sh [TARGET…]   (default: x86_64-unknown-linux-gnu; for GH200/GB200
#   nodes add aarch64-unknown-linux-gnu — it needs `rustup target add`, done here when missing).
# The binary is built once per target by maturin with zig as C compiler and linker, against
# glibc 2.17 (manylinux2014), and checked with auditwheel. VERSION is Cargo.toml's.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(scripts/wheel-deps.sh)
export PATH="$tools:$PATH"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
if [ $# -gt 0 ]; then targets=("$@"); else targets=(x86_64-unknown-linux-gnu); fi
mkdir -p dist
built=()
for t in "${targets[@]}"; do
  if ! rustup target list --installed | grep -qx "$t"; then
    echo "release: adding the Rust target $t" >&2
    rustup target add "$t" >&2
  fi
  maturin build --release --zig --target "$t" --compatibility manylinux2014 --out dist >&2
  arch=${t%%-*}
  wheel=$(ls dist/trainwreck-"$version"-*manylinux*_"$arch".whl 2>/dev/null | head -n 1)
  [ -n "$wheel" ] || { echo "release: maturin wrote no $arch wheel for $t" >&2; exit 1; }
  # The wheel's tag must be the one promised (auditwheel reads the binary's symbol versions).
  # (Read whole, then matched: `auditwheel … | grep -q` under pipefail fails at random when
  # grep quits first and auditwheel dies of SIGPIPE.)
  report=$(auditwheel show "$wheel" 2>&1)
  echo "$report" >&2
  grep -q '"manylinux_2_17_'"$arch"'"' <<<"$report" || {
    echo "release: $wheel is not manylinux_2_17 (manylinux2014)" >&2
    exit 1
  }
  # ELF machine, glibc versions, and (on a machine of its arch) installed and run in a fresh
  # venv with no Rust on PATH.
  scripts/wheel-check.sh "$wheel" "target/wheel-check/$t" >&2
  stage=$(mktemp -d)
  name=trainwreck-$version-$t
  mkdir "$stage/$name"
  # The tarball's binary is the wheel's own (wheel-check.sh took it out of the wheel).
  install -m 755 "target/wheel-check/$t/binary" "$stage/$name/trainwreck"
  cp README.md "$stage/$name/"
  tar -C "$stage" -czf "dist/$name.tar.gz" "$name"
  rm -rf "$stage"
  built+=("$wheel" "dist/$name.tar.gz")
done
# The sums of what this run built (older files in dist/ are not vouched for).
(cd dist && sha256sum -- "${built[@]#dist/}" >SHA256SUMS)
echo "built in dist/:"
for f in "${built[@]}" dist/SHA256SUMS; do
  printf '  %-72s %s\n' "${f#dist/}" "$(du -h "$f" | cut -f1)"
done

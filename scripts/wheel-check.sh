#!/usr/bin/env bash
# Checks a built wheel as a user gets it: installs it into a fresh virtual environment (no
# index: the wheel alone) and runs it with a PATH that holds that environment and the
# system's /usr/bin:/bin only, after making sure no Rust toolchain is reachable there. Checks
# the wheel's name carries Cargo.toml's version, the binary's ELF machine matches the wheel's
# tag, it needs no glibc newer than 2.17, and `trainwreck --version`, `trainwreck analyze`
# on the seed example, `python -m trainwreck` and `python -m trainwreck.ci` work. Needs only
# python3 (with venv) and readelf: no maturin, no Rust, so it runs on a machine that has
# neither. Called by .ci/run and scripts/release.sh.
# Usage: scripts/wheel-check.sh WHEEL [WORKDIR]   (WORKDIR, default a temporary directory,
#   gets the venv and the CI script's report; it is emptied first.)
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=$1
work=$(realpath -m "${2:-$(mktemp -d)}")
fail() {
  echo "wheel-check: $*" >&2
  exit 1
}
[ -f "$wheel" ] || fail "no wheel at $wheel"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
name=$(basename "$wheel")
case $name in
trainwreck-"$version"-py3-none-*.whl) ;;
*) fail "$name does not carry Cargo.toml's version $version" ;;
esac
case $name in
*_x86_64.whl) arch=x86_64 machine='Advanced Micro Devices X86-64' ;;
*_aarch64.whl) arch=aarch64 machine='AArch64' ;;
*) fail "$name: a platform tag this script does not know" ;;
esac

rm -rf "$work"
mkdir -p "$work"
# The binary as the wheel holds it (a wheel is a zip: python3's zipfile reads it).
python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
n = [i for i in z.namelist() if i.endswith(".data/scripts/trainwreck")]
assert len(n) == 1, "the wheel holds one trainwreck binary in its scripts: %r" % n
open(sys.argv[2], "wb").write(z.read(n[0]))' "$wheel" "$work/binary"
got=$(readelf -h "$work/binary" | sed -n 's/^ *Machine: *//p')
[ "$got" = "$machine" ] || fail "$name is tagged $arch but its binary is for $got"
# The newest glibc symbol version the binary asks for (manylinux2014 allows 2.17).
newest=$(readelf -V "$work/binary" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' |
  sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)
[ -n "$newest" ] || fail "$name: its binary names no glibc version (not a glibc binary?)"
if [ "$(printf '%s\n2.17\n' "$newest" | sort -t. -k1,1n -k2,2n | tail -n 1)" != 2.17 ]; then
  fail "$name: its binary needs glibc $newest, newer than manylinux2014's 2.17"
fi
echo "wheel-check: $name: $got binary, needs glibc $newest at most"

if [ "$arch" != "$(uname -m)" ]; then
  echo "wheel-check: $name is for $arch, this machine is $(uname -m): not installed or run here"
  exit 0
fi
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --disable-pip-version-check --quiet --no-index "$wheel"
clean_path="$work/venv/bin:/usr/bin:/bin"
if env PATH="$clean_path" sh -c 'command -v cargo || command -v rustc'; then
  fail "a Rust toolchain is on the clean PATH: the check would prove nothing"
fi
run() { env -i HOME="$HOME" LANG=C PATH="$clean_path" "$@"; }
[ "$(run sh -c 'command -v trainwreck')" = "${clean_path%%:*}/trainwreck" ] ||
  fail "trainwreck on the clean PATH is not the venv's"
out=$(run trainwreck --version)
[ "$out" = "trainwreck $version" ] || fail "trainwreck --version printed '$out', not 'trainwreck $version'"
# The seed example is a diagnosed /dev/shm SIGBUS (README's first example).
run trainwreck analyze fixtures/seed-bus-error >"$work/analyze.txt"
grep -q '^Cause: shm_exhausted' "$work/analyze.txt" ||
  fail "analyze of the seed example did not name shm_exhausted: $(head -n 3 "$work/analyze.txt")"
out=$(run python -m trainwreck --version)
[ "$out" = "trainwreck $version" ] || fail "python -m trainwreck --version printed '$out'"
# The CI script the wheel ships (the GitLab template's `python3 -m trainwreck.ci`).
run TRAINWRECK_PATH=fixtures/seed-bus-error TRAINWRECK_EXIT_CODE=never \
  TRAINWRECK_OUT="$work/report" python -m trainwreck.ci >/dev/null
grep -qx 'TRAINWRECK_ACTION=fix-config' "$work/report/summary.env" ||
  fail "python -m trainwreck.ci wrote no fix-config action: $(cat "$work/report/summary.env")"
echo "wheel-check: $name installed into a fresh venv and ran with no Rust toolchain on PATH"

#!/usr/bin/env bash
# A throwaway PostgreSQL server for the history tests (tests/history.rs, run with --ignored).
#   eval "$(scripts/pg-test-server.sh start)"   # installs PostgreSQL from apt if initdb is
#                                               # missing; prints TRAINWRECK_TEST_PG and TW_PG_DIR
#   scripts/pg-test-server.sh stop "$TW_PG_DIR" # stops it and removes its data directory
# The server listens on 127.0.0.1 only, on a free port, with trust authentication, in a temp
# directory. PostgreSQL refuses to run as root, so as root it runs as `nobody`.
set -euo pipefail

find_bin() {
  local d
  if command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ]; then
      echo "$d"
    fi
  done | sort -V | tail -n 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u nobody -- "$@"
  else
    "$@"
  fi
}

start() {
  local bin
  bin=$(find_bin)
  if [ -z "$bin" ]; then
    echo "pg-test-server: installing postgresql from apt" >&2
    if [ "$(id -u)" != 0 ]; then
      echo "pg-test-server: initdb not found and not root: cannot install postgresql" >&2
      return 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
    bin=$(find_bin)
  fi
  [ -n "$bin" ] || { echo "pg-test-server: no initdb after install" >&2; return 1; }
  local dir port
  dir=$(mktemp -d /tmp/tw-pg.XXXXXX)
  chmod 755 "$dir"
  if [ "$(id -u)" = 0 ]; then chown nobody "$dir"; fi
  # A free port: ask the kernel for one, then let it go.
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_owner "$bin/initdb" -D "$dir/data" -A trust -U tw --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; return 1; }
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=100" start >&2 ||
    { cat "$dir/server.log" >&2; return 1; }
  echo "export TRAINWRECK_TEST_PG=postgres://tw@127.0.0.1:$port/postgres"
  echo "export TW_PG_DIR=$dir"
  echo "export TW_PG_BIN=$bin"
}

stop() {
  local dir=${1:?usage: pg-test-server.sh stop DIR}
  local bin=${TW_PG_BIN:-$(find_bin)}
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 start | stop DIR" >&2; exit 2 ;;
esac

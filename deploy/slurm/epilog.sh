#!/bin/sh
# trainwreck as a Slurm epilog: when a job failed, diagnose its output files, record the
# diagnosis in the team's failure history and leave the report beside the job's output
# (trainwreck-JOBID.md). A job that succeeded costs one environment check and nothing else.
#
# Install (slurm.conf; Slurm runs epilogs with no PATH, so paths are absolute):
#   Epilog=/etc/slurm/epilog.d/trainwreck.sh            # on each compute node, as root
#   # or EpilogSlurmctld=… to run it once per job on the controller
# Settings, from the environment or /etc/default/trainwreck-epilog (sourced when present):
#   TRAINWRECK=/usr/local/bin/trainwreck   the binary (default: trainwreck on PATH)
#   TRAINWRECK_DB=postgres://…              the team's history (else trainwreck's default)
#   TRAINWRECK_EPILOG_ARGS="--lang zh --notify https://…"   extra analyze flags
#   TRAINWRECK_EPILOG_TIMEOUT=120           seconds the analysis may take (default 120)
#   TRAINWRECK_EPILOG_LOG=/var/log/trainwreck-epilog.log    where its own messages go
#
# It always exits 0: an epilog that fails drains the node, and a diagnosis is never worth
# that. Its own messages go to TRAINWRECK_EPILOG_LOG (default: stderr, which slurmd logs).
# Slurm's variables used: SLURM_JOB_ID, SLURM_JOB_EXIT_CODE2 (exit:signal) or
# SLURM_JOB_EXIT_CODE (wait status) where this Slurm sets them, SLURM_JOB_UID/GID,
# SLURM_JOB_NODELIST; otherwise `scontrol show job` and then `sacct` are asked.

conf=${TRAINWRECK_EPILOG_CONF:-/etc/default/trainwreck-epilog}
# shellcheck disable=SC1090
[ -r "$conf" ] && . "$conf"
PATH=${PATH:-/usr/local/bin:/usr/bin:/bin}
export PATH

log() {
  if [ -n "${TRAINWRECK_EPILOG_LOG:-}" ]; then
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) trainwreck-epilog[${SLURM_JOB_ID:-?}]: $*" \
      >>"$TRAINWRECK_EPILOG_LOG" 2>/dev/null
  else
    echo "trainwreck-epilog[${SLURM_JOB_ID:-?}]: $*" >&2
  fi
}

job=${SLURM_JOB_ID:-${SLURM_JOBID:-}}
[ -n "$job" ] || exit 0

# Did the job fail? Slurm's own variables first: they cost nothing.
failed=
if [ -n "${SLURM_JOB_EXIT_CODE2:-}" ]; then
  [ "$SLURM_JOB_EXIT_CODE2" = "0:0" ] || failed=1
elif [ -n "${SLURM_JOB_EXIT_CODE:-}" ]; then
  [ "$SLURM_JOB_EXIT_CODE" = 0 ] || failed=1
fi
if [ -z "$failed" ] && { [ -n "${SLURM_JOB_EXIT_CODE2:-}" ] || [ -n "${SLURM_JOB_EXIT_CODE:-}" ]; }; then
  exit 0
fi

# One line of `Key=Value` pairs (`-o`). A value ends at the first space: a path with spaces
# in it is not found (and the job is then only logged as undiagnosable).
info=$(scontrol -o show job "$job" 2>/dev/null) || info=
value() { # KEY: its value in $info
  printf '%s\n' "$info" | sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | head -n 1
}
workdir=$(value WorkDir)
state=$(value JobState)
code=$(value ExitCode)
if [ -z "$state$code" ] && command -v sacct >/dev/null 2>&1; then
  # The job has left slurmctld's memory: the accounting database knows.
  line=$(sacct -n -X -P -j "$job" -o State,ExitCode,WorkDir 2>/dev/null | head -n 1)
  state=${line%%|*}
  line=${line#*|}
  code=${line%%|*}
  workdir=${line#*|}
fi
if [ -z "$failed" ]; then
  case $state in
  FAILED* | NODE_FAIL* | OUT_OF_MEMORY* | TIMEOUT* | BOOT_FAIL* | DEADLINE* | PREEMPTED*)
    failed=1
    ;;
  CANCELLED*) ;; # a person's decision, not a failure to explain
  *) [ -z "$code" ] || [ "$code" = "0:0" ] || failed=1 ;;
  esac
fi
[ -n "$failed" ] || exit 0

# Epilog runs on every node of the job: only the batch host diagnoses (and records) it, once.
# EpilogSlurmctld runs once, on the controller.
batch=$(value BatchHost)
if [ "${SLURM_SCRIPT_CONTEXT:-}" != epilog_slurmctld ] && [ -n "$batch" ]; then
  me=$(hostname -s 2>/dev/null || hostname)
  [ "$batch" = "$me" ] || [ "$batch" = "$(hostname 2>/dev/null)" ] || exit 0
fi

tw=${TRAINWRECK:-trainwreck}
if ! command -v "$tw" >/dev/null 2>&1; then
  log "job failed, but there is no '$tw' to diagnose it (set TRAINWRECK in $conf)"
  exit 0
fi

# The job's output files: StdOut and StdErr (the same file unless --error was given).
stdout=$(value StdOut)
stderr=$(value StdErr)
# sbatch's default output file, when only the accounting database knew the job.
[ -n "$stdout$stderr" ] || stdout=${workdir:-.}/slurm-$job.out
set --
for f in "$stdout" "$stderr"; do
  [ -n "$f" ] && [ -f "$f" ] || continue
  for seen in "$@"; do [ "$seen" = "$f" ] && continue 2; done
  set -- "$@" "$f"
done
# Logs the job wrote beside its output (a `logs/` dir the team's scripts fill), if named.
for extra in ${TRAINWRECK_EPILOG_EXTRA:-}; do
  p=$extra
  case $p in /*) ;; *) p=${workdir:-.}/$p ;; esac
  [ -e "$p" ] && set -- "$@" "$p"
done
if [ $# -eq 0 ]; then
  log "job failed, but its output files (StdOut=${stdout:-?} StdErr=${stderr:-?}) are not readable here"
  exit 0
fi

dir=$(dirname "$1")
report=$dir/trainwreck-$job.md
nodes=${SLURM_JOB_NODELIST:-$(value NodeList)}
host=
case $nodes in *[,[]* | "") ;; *) host="--host $nodes" ;; esac

limit=${TRAINWRECK_EPILOG_TIMEOUT:-120}
run_limited() {
  if command -v timeout >/dev/null 2>&1; then timeout "$limit" "$@"; else "$@"; fi
}
tmp=$report.tmp.$$
# shellcheck disable=SC2086
run_limited "$tw" analyze "$@" --format markdown --record --job "$job" $host \
  ${TRAINWRECK_EPILOG_ARGS:-} >"$tmp" 2>"$tmp.err"
status=$?
if [ -s "$tmp" ]; then
  mv -f "$tmp" "$report"
  # The report is the job owner's to read (slurmd runs the epilog as root).
  if [ -n "${SLURM_JOB_UID:-}" ] && [ "$(id -u)" = 0 ]; then
    chown "$SLURM_JOB_UID${SLURM_JOB_GID:+:$SLURM_JOB_GID}" "$report" 2>/dev/null
  fi
  log "job failed: report in $report (trainwreck exit status $status)"
else
  rm -f "$tmp"
  log "job failed, and trainwreck wrote no report (exit status $status)"
fi
if [ "$status" -ne 0 ] && [ -s "$tmp.err" ]; then
  while IFS= read -r l; do log "$l"; done <"$tmp.err"
fi
rm -f "$tmp.err"
exit 0

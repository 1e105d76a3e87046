#!/bin/sh
# trainwreck in CI: the one script behind the GitHub Action (action.yml) and the GitLab CI
# template (deploy/gitlab/trainwreck.gitlab-ci.yml), shipped in the wheel too
# (`python3 -m trainwreck.ci` runs it). POSIX sh, so an Alpine or slim image runs it.
#
# It diagnoses TRAINWRECK_PATH, writes the report files, tells the CI system what it found in
# the way that system reads, and exits with the action class. It never installs anything and
# never decides anything itself: every verdict is the binary's.
#
# Inputs (environment):
#   TRAINWRECK_PATH       what to read: a run's directory, file or archive (analyze), or a
#                         parent of many runs (triage). Required.
#   TRAINWRECK_MODE       analyze (default) or triage.
#   TRAINWRECK_EXIT_CODE  action (default): exit 0 no failure, 10 retry, 11 replace hardware,
#                         12 fix config/environment, 13 fix code, 14 investigate;
#                         never: exit 0 whatever was found (usage errors still exit 2).
#   TRAINWRECK_ARGS       extra flags for trainwreck, split on spaces (e.g. `--lang zh`,
#                         `--notify https://…`, `--db postgres://…`).
#   TRAINWRECK_OUT        where the report files go (default: $RUNNER_TEMP/trainwreck on
#                         GitHub, $CI_PROJECT_DIR/trainwreck-report on GitLab, else
#                         ./trainwreck-report).
#   TRAINWRECK_BIN        the binary (default: trainwreck on PATH).
# Writes into TRAINWRECK_OUT: report.json, report.md, summary.env, and junit.xml (analyze,
# except on GitHub, which reads no JUnit).
# GitHub ($GITHUB_ACTIONS): the Markdown report appended to $GITHUB_STEP_SUMMARY, ::error and
# ::warning annotations on stdout, outputs (verdict, action, code, cause, fingerprint,
# exit-code, report) in $GITHUB_OUTPUT. GitLab ($GITLAB_CI): summary.env is a dotenv report
# (TRAINWRECK_VERDICT, …) for later jobs; the Markdown report is printed in a collapsed section.
set -eu
# Nothing here is a glob: TRAINWRECK_ARGS and paths are split on spaces, never expanded.
set -f

tw=${TRAINWRECK_BIN:-trainwreck}
mode=${TRAINWRECK_MODE:-analyze}
exit_mode=${TRAINWRECK_EXIT_CODE:-action}
path=${TRAINWRECK_PATH:-}

say() { echo "trainwreck-ci: $*" >&2; }

if [ -z "$path" ]; then
  say "TRAINWRECK_PATH is empty: set it to the run's logs (a directory, file or archive)"
  exit 2
fi
case $mode in analyze | triage) ;; *)
  say "TRAINWRECK_MODE must be analyze or triage, not '$mode'"
  exit 2
  ;;
esac
case $exit_mode in action | never) ;; *)
  say "TRAINWRECK_EXIT_CODE must be action or never, not '$exit_mode'"
  exit 2
  ;;
esac
if ! command -v "$tw" >/dev/null 2>&1; then
  say "no '$tw' on PATH: install it first (python3 -m pip install trainwreck)"
  exit 2
fi

if [ -n "${TRAINWRECK_OUT:-}" ]; then
  out=$TRAINWRECK_OUT
elif [ -n "${GITHUB_ACTIONS:-}" ] && [ -n "${RUNNER_TEMP:-}" ]; then
  out=$RUNNER_TEMP/trainwreck
elif [ -n "${GITLAB_CI:-}" ] && [ -n "${CI_PROJECT_DIR:-}" ]; then
  out=$CI_PROJECT_DIR/trainwreck-report
else
  out=trainwreck-report
fi
mkdir -p "$out"

# Extra flags are split on spaces on purpose (POSIX sh has no arrays).
# shellcheck disable=SC2086
set -- ${TRAINWRECK_ARGS:-}

# The JSON report first: its exit status is the action class (analyze; triage's is worked
# out from its groups below). 2 is bad usage (a path that does not exist): stop there.
status=0
if [ "$mode" = analyze ]; then
  "$tw" analyze "$path" --format json --exit-code action "$@" >"$out/report.json" || status=$?
else
  "$tw" triage "$path" --format json "$@" >"$out/report.json" || status=$?
fi
if [ "$status" -eq 2 ] || { [ "$mode" = triage ] && [ "$status" -ne 0 ]; } ||
  { [ "$status" -ne 0 ] && [ "$status" -lt 10 ]; }; then
  say "trainwreck $mode failed (exit status $status); see its message above"
  exit "$status"
fi
# The notice (if --notify was given) went with the JSON run; the other formats only render.
notify_free() {
  skip=
  for a in "$@"; do
    if [ -n "$skip" ]; then skip=; continue; fi
    case $a in
    --notify | --notify-cmd | --record | --db) [ "$a" = --record ] || skip=1 ;;
    --notify=* | --notify-cmd=* | --db=*) ;;
    *) printf '%s\n' "$a" ;;
    esac
  done
}
rest=$(notify_free "$@")
# shellcheck disable=SC2086
set -- $rest
"$tw" "$mode" "$path" --format markdown "$@" >"$out/report.md"
# JUnit for the systems that show test reports (GitLab's merge requests); GitHub does not.
if [ "$mode" = analyze ] && [ -z "${GITHUB_ACTIONS:-}" ]; then
  "$tw" analyze "$path" --format junit "$@" >"$out/junit.xml"
fi

# Fields of our own pretty JSON, read by their indentation (serde_json's two spaces per
# level): top-level keys at two, the keys of an array's objects at six.
top_field() { # FILE KEY
  sed -n "s/^  \"$2\": \"\(.*\)\",\{0,1\}\$/\1/p" "$1" | head -n 1
}
# The fields of the first object of ARRAY (findings, groups) whose verdict is not no_failure,
# as KEY=VALUE lines: fingerprint, verdict, code, action, title.
first_of() { # FILE ARRAY
  awk -v arr="$2" '
    $0 ~ "^  \"" arr "\": \\[" { inside = 1; next }
    inside && /^  \]/ { exit }
    inside && /^    \{/ { delete f; next }
    inside && /^      "(fingerprint|verdict|code|action|title)": "/ {
      k = $0; sub(/^      "/, "", k); sub(/".*/, "", k)
      v = $0; sub(/^      "[a-z_]+": "/, "", v); sub(/",?$/, "", v)
      f[k] = v
    }
    inside && /^    \},?$/ {
      if (f["verdict"] != "no_failure") {
        for (k in f) print k "=" f[k]
        exit
      }
    }
  ' "$1"
}
pick() { # LINES KEY
  printf '%s\n' "$1" | sed -n "s/^$2=//p" | head -n 1
}
action_status() {
  case $1 in
  none) echo 0 ;;
  retry | retry-elsewhere | retry-or-investigate) echo 10 ;;
  replace-hardware) echo 11 ;;
  fix-config | fix-environment) echo 12 ;;
  fix-code) echo 13 ;;
  *) echo 14 ;;
  esac
}

if [ "$mode" = analyze ]; then
  top=$(first_of "$out/report.json" findings)
  verdict=$(top_field "$out/report.json" verdict)
  fingerprint=$(top_field "$out/report.json" fingerprint)
else
  # Groups come largest first: the first failed one is the triage's answer.
  top=$(first_of "$out/report.json" groups)
  verdict=$(pick "$top" verdict)
  fingerprint=$(pick "$top" fingerprint)
fi
code=$(pick "$top" code)
cause=$(pick "$top" title)
action=$(pick "$top" action)
[ -n "$verdict" ] || verdict=no_failure
if [ -z "$action" ]; then
  if [ "$verdict" = no_failure ]; then action=none; else action=investigate; fi
fi
if [ "$mode" = triage ]; then
  status=$(action_status "$action")
elif [ "$(action_status "$action")" != "$status" ]; then
  say "the report's action ($action) and exit status ($status) disagree: please report this"
fi

{
  echo "TRAINWRECK_VERDICT=$verdict"
  echo "TRAINWRECK_ACTION=$action"
  echo "TRAINWRECK_CODE=$code"
  echo "TRAINWRECK_FINGERPRINT=$fingerprint"
  echo "TRAINWRECK_STATUS=$status"
} >"$out/summary.env"

if [ -n "${GITHUB_ACTIONS:-}" ]; then
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    cat "$out/report.md" >>"$GITHUB_STEP_SUMMARY"
  fi
  if [ "$mode" = analyze ]; then
    "$tw" analyze "$path" --format github "$@"
  else
    # One annotation per failed group; workflow-command escaping (% first, then breaks).
    awk '
      /^  "groups": \[/ { inside = 1; next }
      inside && /^  \]/ { exit }
      inside && /^    \{/ { delete f; next }
      inside && /^      "(fingerprint|verdict|action|title)": "/ {
        k = $0; sub(/^      "/, "", k); sub(/".*/, "", k)
        v = $0; sub(/^      "[a-z_]+": "/, "", v); sub(/",?$/, "", v)
        f[k] = v
      }
      inside && /^      "count": / { c = $0; gsub(/[^0-9]/, "", c); f["count"] = c }
      inside && /^    \},?$/ && f["verdict"] != "no_failure" {
        t = f["title"] == "" ? "a failure no rule explains" : f["title"]
        m = f["count"] " run(s): " t " [" f["fingerprint"] "]"
        gsub(/%/, "%25", m)
        print "::error title=trainwreck triage (" f["action"] ")::" m
      }
    ' "$out/report.json"
  fi
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    {
      echo "verdict=$verdict"
      echo "action=$action"
      echo "code=$code"
      echo "cause=$cause"
      echo "fingerprint=$fingerprint"
      echo "exit-code=$status"
      echo "report=$out/report.json"
    } >>"$GITHUB_OUTPUT"
  fi
elif [ -n "${GITLAB_CI:-}" ]; then
  # A collapsed section in the job log (GitLab's section markers).
  printf '\033[0Ksection_start:%s:trainwreck[collapsed=false]\r\033[0Ktrainwreck: %s\n' \
    "$(date +%s)" "${cause:-$verdict}"
  cat "$out/report.md"
  printf '\033[0Ksection_end:%s:trainwreck\r\033[0K\n' "$(date +%s)"
else
  cat "$out/report.md"
fi

say "$verdict, action $action, exit $status; reports in $out"
if [ "$exit_mode" = never ]; then
  exit 0
fi
exit "$status"

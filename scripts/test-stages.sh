# Stage bookkeeping for scripts/test.sh, sourced by it: every stage's time,
# its outcome and the reason for it, printed as one table at the end and kept
# in .build/test-stages.tsv (docs/measurements/test-suite.md quotes it).
#
#   stage NAME BUDGET_S COMMAND...   run a stage in the foreground; past its
#                                    budget it is stopped and counted failed
#   skip NAME REASON                 a stage that cannot run here, and why
#   background NAME BUDGET_S COMMAND...
#                                    start a stage beside the ones that follow
#                                    (one that mostly waits, or builds what a
#                                    later stage needs); the same budget rule
#   await NAME                       wait for it; its log is printed, and its
#                                    row counts its own time, start to end
#   stage_report                     the table; returns non-zero if one failed
#   stage_failures                   for each failed stage, the lines of its
#                                    log that say why (CI shows a run's tail)

STAGE_LOG_DIR="${STAGE_LOG_DIR:-.build/test-logs}"
STAGE_TABLE="${STAGE_TABLE:-.build/test-stages.tsv}"
declare -a STAGE_ROWS=()
declare -A BACKGROUND_PID=() BACKGROUND_BUDGET=()
SUITE_START=$SECONDS

mkdir -p "$STAGE_LOG_DIR"

_row() { # _row NAME STATUS SECONDS NOTE
  STAGE_ROWS+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"$4")
}

stage() { # stage NAME BUDGET_S COMMAND...
  local name="$1" budget="$2"
  shift 2
  printf '\n=== %s (budget %d s, %d s into the run): %s\n' "$name" "$budget" \
    $((SECONDS - SUITE_START)) "$*"
  # The stage's output as it comes, and in its log for stage_failures.
  _budgeted "$name" "$budget" "$@" 2>&1 | tee "$STAGE_LOG_DIR/$name.log"
  _record "$name" "$budget" "${PIPESTATUS[0]}" ""
}

# Runs COMMAND in a subshell, so that it may be one of this script's functions,
# under a watchdog that stops it (and everything it started) once past its
# budget; its own time goes to NAME.seconds. The command's exit status.
_budgeted() { # _budgeted NAME BUDGET_S COMMAND...
  local name="$1" budget="$2" started=$SECONDS status=0
  shift 2
  local over="$STAGE_LOG_DIR/$name.over-budget"
  rm -f "$over"
  ("$@") &
  local pid=$!
  _watchdog "$pid" "$budget" "$over" </dev/null >/dev/null 2>&1 &
  local watchdog=$!
  wait "$pid" || status=$?
  kill "$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  echo $((SECONDS - started)) >"$STAGE_LOG_DIR/$name.seconds"
  return "$status"
}

_record() { # _record NAME BUDGET_S STATUS NOTE: the stage's row, from its own time
  local name="$1" budget="$2" status="$3" note="$4" took
  took="$(cat "$STAGE_LOG_DIR/$name.seconds")"
  if [[ -f "$STAGE_LOG_DIR/$name.over-budget" ]]; then
    printf '\n!!! %s: stopped, over its %d s budget\n' "$name" "$budget"
    _row "$name" failed "$took" "${note:+$note; }stopped: over its ${budget} s budget"
  elif ((status == 0)); then
    _row "$name" passed "$took" "$note"
  else
    _row "$name" failed "$took" "${note:+$note; }exit status $status"
  fi
}

_descendants() { # every process below PID, children first
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    _descendants "$child"
    echo "$child"
  done
}

_watchdog() { # _watchdog PID BUDGET_S MARKER: SIGTERM past the budget, SIGKILL 30 s later
  local pid="$1" budget="$2" marker="$3" tree sleeper
  # Stopped when the stage ends in time: its sleep goes with it.
  trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
  sleep "$budget" &
  sleeper=$!
  wait "$sleeper"
  kill -0 "$pid" 2>/dev/null || return 0
  echo "over budget" >"$marker"
  tree="$(_descendants "$pid") $pid"
  # shellcheck disable=SC2086
  kill -TERM $tree 2>/dev/null
  sleep 30 &
  sleeper=$!
  wait "$sleeper"
  # shellcheck disable=SC2086
  kill -KILL $tree 2>/dev/null
  return 0
}

skip() { # skip NAME REASON
  printf '\n=== %s: SKIPPED (%s)\n' "$1" "$2"
  _row "$1" skipped 0 "$2"
}

background() { # background NAME BUDGET_S COMMAND...
  local name="$1" budget="$2"
  shift 2
  printf '\n=== %s: started in the background (budget %d s, %d s into the run): %s\n' \
    "$name" "$budget" $((SECONDS - SUITE_START)) "$*"
  BACKGROUND_BUDGET[$name]=$budget
  _budgeted "$name" "$budget" "$@" >"$STAGE_LOG_DIR/$name.log" 2>&1 &
  BACKGROUND_PID[$name]=$!
}

await() { # await NAME: its exit status; its output printed now
  local name="$1" status=0
  local waited=$SECONDS
  wait "${BACKGROUND_PID[$name]}" || status=$?
  printf '\n=== %s: background job done (waited %d s for it)\n' "$name" $((SECONDS - waited))
  cat "$STAGE_LOG_DIR/$name.log"
  _record "$name" "${BACKGROUND_BUDGET[$name]}" "$status" "in the background"
  return $status
}

stage_report() {
  local total=$((SECONDS - SUITE_START)) passed=0 failed=0 skipped=0 row name status took note
  printf 'stage\tresult\tseconds\tnote\n' >"$STAGE_TABLE"
  echo
  echo "======================================================================"
  printf '%-22s %-8s %7s  %s\n' stage result seconds note
  for row in "${STAGE_ROWS[@]}"; do
    IFS=$'\t' read -r name status took note <<<"$row"
    printf '%-22s %-8s %7s  %s\n' "$name" "$status" "$took" "$note"
    printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$took" "$note" >>"$STAGE_TABLE"
    case "$status" in
      passed) passed=$((passed + 1)) ;;
      failed) failed=$((failed + 1)) ;;
      *) skipped=$((skipped + 1)) ;;
    esac
  done
  printf '%-22s %-8s %7s\n' total "" "$total"
  printf 'total\t\t%s\t\n' "$total" >>"$STAGE_TABLE"
  STAGE_COUNTS=("$passed" "$failed" "$skipped")
  ((failed == 0))
}

# The lines of a failed stage's log that name what failed: pytest's summary
# (FAILED/ERROR) and a command's own failure list ("  - ...").
FAILURE_LINES='^(FAILED|ERROR) |^  - [^ ]'

stage_failures() {
  local row name status note lines
  for row in "${STAGE_ROWS[@]}"; do
    IFS=$'\t' read -r name status _ note <<<"$row"
    [[ "$status" == failed ]] || continue
    echo "--- $name failed, $note ($STAGE_LOG_DIR/$name.log):"
    lines="$(grep -E "$FAILURE_LINES" "$STAGE_LOG_DIR/$name.log" 2>/dev/null | tail -n 12)"
    # Nothing recognisable: the end of its output says most.
    [[ -n "$lines" ]] || lines="$(tail -n 8 "$STAGE_LOG_DIR/$name.log" 2>/dev/null)"
    printf '%s\n' "$lines" | cut -c1-300
  done
}

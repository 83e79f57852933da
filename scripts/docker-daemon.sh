#!/usr/bin/env bash
# Start a Docker daemon when none answers, and stop exactly the one started.
#
#   scripts/docker-daemon.sh start          # no-op when a daemon already answers
#   scripts/docker-daemon.sh stop           # stops only the daemon `start` launched
#   scripts/docker-daemon.sh status
#   scripts/docker-daemon.sh run -- CMD...  # start, run CMD, stop what was started
#
# The daemon runs with `--iptables=false --bridge=none`: every serverlab
# container uses the host network (no NAT, no docker-proxy in the measured
# path), so no bridge or firewall rules are needed, and the daemon starts on
# machines where iptables is unavailable. Debian's `docker.io` is installed
# when `dockerd` is missing (root only).
#
# The daemon's PID and start time go to .build/docker/dockerd.pid; `stop`
# signals that PID only if it still is that same process, so a daemon
# somebody else started is never touched.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="${SERVERLAB_DOCKER_STATE:-$REPO_ROOT/.build/docker}"
PID_FILE="$STATE_DIR/dockerd.pid"
LOG_FILE="$STATE_DIR/dockerd.log"
SYSTEM_PID_FILE=/var/run/docker.pid
START_TIMEOUT_S=60
STOP_TIMEOUT_S=30

say() { printf '[docker-daemon] %s\n' "$*" >&2; }

answers() { docker info >/dev/null 2>&1; }

# Field 22 of /proc/PID/stat: start time in clock ticks since boot. With the
# PID it identifies one process for good (PIDs are reused, start times not).
start_time() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  # shellcheck disable=SC2086
  set -- $stat
  echo "${20}"
}

is_dockerd() { [[ "$(cat "/proc/$1/comm" 2>/dev/null)" == dockerd ]]; }

install_docker() {
  command -v dockerd >/dev/null && return
  if [[ $(id -u) -ne 0 ]]; then
    say "dockerd not found; install Docker (Debian: sudo apt-get install docker.io)"
    exit 1
  fi
  say "installing Debian's docker.io"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends docker.io >/dev/null
}

clear_stale_system_pid() {
  # dockerd refuses to start while /var/run/docker.pid names a live process;
  # a file left by a killed daemon names a dead (or reused) PID.
  [[ -f "$SYSTEM_PID_FILE" ]] || return 0
  local pid
  pid="$(cat "$SYSTEM_PID_FILE" 2>/dev/null || true)"
  if [[ "$pid" =~ ^[0-9]+$ ]] && is_dockerd "$pid"; then
    say "a dockerd (PID $pid, from $SYSTEM_PID_FILE) is running but does not answer;"
    say "it was not started here, so it is left alone: fix or stop it, then retry"
    say "(log of a daemon started here: $LOG_FILE)"
    exit 1
  fi
  say "removing stale $SYSTEM_PID_FILE (PID ${pid:-?} is not a running dockerd)"
  rm -f "$SYSTEM_PID_FILE"
}

cmd_start() {
  if answers; then
    say "a Docker daemon already answers; using it (it will not be stopped here)"
    return 0
  fi
  install_docker
  if [[ $(id -u) -ne 0 ]]; then
    say "no Docker daemon answers and starting one needs root"
    exit 1
  fi
  clear_stale_system_pid
  mkdir -p "$STATE_DIR"
  say "starting dockerd --iptables=false --bridge=none (log: $LOG_FILE)"
  # A container's nofile ulimit cannot exceed the daemon's own hard limit.
  # Docker's systemd unit raises it to the kernel maximum (LimitNOFILE=
  # infinity); do the same where allowed (needs CAP_SYS_RESOURCE), else keep
  # this shell's limit, which must cover the compose file's nofile value.
  local nofile
  nofile="$(cat /proc/sys/fs/nr_open 2>/dev/null || echo 1048576)"
  # setsid: the daemon is not in our process group, so Ctrl-C in make does
  # not kill it half-way; `stop` (or the `run` trap) ends it by PID.
  (
    ulimit -Hn "$nofile" 2>/dev/null || true
    ulimit -Sn "$(ulimit -Hn)"
    exec setsid dockerd --iptables=false --bridge=none
  ) >"$LOG_FILE" 2>&1 </dev/null &
  local pid=$!
  echo "$pid $(start_time "$pid")" >"$PID_FILE"
  local waited=0
  until answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$PID_FILE"
      say "dockerd exited during start-up; last lines of its log:"
      tail -n 20 "$LOG_FILE" >&2
      exit 1
    fi
    if ((waited >= START_TIMEOUT_S * 2)); then
      say "dockerd did not answer within ${START_TIMEOUT_S} s; stopping it"
      cmd_stop
      exit 1
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  say "dockerd is up (PID $pid, open files limit $(awk '/Max open files/ {print $5}' "/proc/$pid/limits"))"
}

cmd_stop() {
  if [[ ! -f "$PID_FILE" ]]; then
    say "no daemon was started here ($PID_FILE absent); nothing to stop"
    return 0
  fi
  local pid started
  read -r pid started <"$PID_FILE"
  if ! is_dockerd "$pid" || [[ "$(start_time "$pid")" != "$started" ]]; then
    say "PID $pid is no longer the dockerd started here; nothing to stop"
    rm -f "$PID_FILE"
    return 0
  fi
  say "stopping dockerd (PID $pid)"
  kill -TERM "$pid"
  local waited=0
  while kill -0 "$pid" 2>/dev/null && ((waited < STOP_TIMEOUT_S * 10)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "dockerd (PID $pid) still running after ${STOP_TIMEOUT_S} s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
  say "dockerd stopped"
}

cmd_status() {
  if answers; then
    echo "Docker daemon answers: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"
  else
    echo "no Docker daemon answers"
  fi
  if [[ -f "$PID_FILE" ]]; then
    echo "started here: PID $(cut -d' ' -f1 "$PID_FILE") ($PID_FILE)"
  fi
}

cmd_run() {
  [[ "${1:-}" == "--" ]] && shift
  (($#)) || { say "usage: $0 run -- COMMAND..."; exit 2; }
  local had_pid_file=0
  [[ -f "$PID_FILE" ]] && had_pid_file=1
  cmd_start
  local started_here=0
  # Only a daemon this invocation launched is stopped at the end.
  if ((had_pid_file == 0)) && [[ -f "$PID_FILE" ]]; then
    started_here=1
  fi
  if ((started_here)); then
    # Also on Ctrl-C or a failing command: never leave our daemon behind.
    trap cmd_stop EXIT
  fi
  local status=0
  "$@" || status=$?
  return "$status"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
run)
  shift
  cmd_run "$@"
  ;;
*)
  echo "usage: $0 start|stop|status|run -- COMMAND..." >&2
  exit 2
  ;;
esac

#!/usr/bin/env bash
# Render nginx-$STATIC_CONFIG.conf (tuned by default, or stock) for this run and
# exec nginx in the foreground, so SIGTERM (fast shutdown) and SIGQUIT
# (graceful) reach the master directly.
set -euo pipefail
config="${STATIC_CONFIG:-tuned}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
template="$here/nginx-$config.conf"
[[ -f $template ]] || { echo "STATIC_CONFIG=$config: no $template" >&2; exit 2; }
: "${TLS_CERT:?TLS_CERT must name the PEM certificate}" "${TLS_KEY:?TLS_KEY must name the PEM key}"
: "${PORT:?PORT must be set}" "${BUILD_DIR:?BUILD_DIR must be set}"
docroot="${STATIC_ROOT:-$BUILD_DIR/site}"

# WORKERS unset: the CPUs this process may use, cgroup-aware. nproc honours
# the affinity mask (taskset, cpuset); a CFS quota lowers it further.
cpus() {
  local n quota period
  n=$(nproc)
  if [[ -r /sys/fs/cgroup/cpu.max ]]; then
    read -r quota period </sys/fs/cgroup/cpu.max
  elif [[ -r /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then
    quota=$(</sys/fs/cgroup/cpu/cpu.cfs_quota_us) period=$(</sys/fs/cgroup/cpu/cpu.cfs_period_us)
  fi
  if [[ ${quota:-max} =~ ^[0-9]+$ ]] && ((quota > 0)); then
    local limit=$(((quota + period - 1) / period))
    ((limit < n)) && n=$limit
  fi
  echo "$n"
}
workers="${WORKERS:-$(cpus)}"

# As root the master hands the workers to www-data (Debian's default user);
# unprivileged, nginx ignores "user" with a warning, so it is left out.
user_line=""
if [[ $(id -u) -eq 0 ]]; then
  user_line="user www-data;"
  if ! runuser -u www-data -- test -r "$docroot/index.html"; then
    echo "nginx-static: the workers run as www-data, which cannot read $docroot/index.html;" \
      "make every folder above it searchable (chmod o+x) or use a BUILD_DIR elsewhere" >&2
    exit 2
  fi
fi

mkdir -p "$BUILD_DIR/tmp"
sed -e "s|@USER_LINE@|$user_line|" \
  -e "s|@WORKERS@|$workers|" \
  -e "s|@HOST@|${HOST:-0.0.0.0}|" \
  -e "s|@PORT@|$PORT|" \
  -e "s|@BUILD_DIR@|$BUILD_DIR|g" \
  -e "s|@DOCROOT@|$docroot|" \
  -e "s|@TLS_CERT@|$TLS_CERT|" \
  -e "s|@TLS_KEY@|$TLS_KEY|" \
  "$template" >"$BUILD_DIR/nginx.conf"
exec nginx -p "$BUILD_DIR/" -c "$BUILD_DIR/nginx.conf" -e stderr -g 'daemon off;'

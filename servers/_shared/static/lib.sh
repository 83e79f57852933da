# Shell functions shared by the static stacks' run.sh (sourced, not run).

# Check the run's environment and set what every run.sh needs: `template`
# (<server>-$STATIC_CONFIG.conf next to run.sh, tuned by default), `docroot`,
# `workers`, and `worker_user`: www-data when started as root, since nginx and
# Apache then hand their workers to it (Debian's default user), else empty
# (unprivileged, they keep the user they run as). Exits 2 with the reason
# when something is missing or www-data cannot read the site.
prepare_run() { # SERVER STACK_FOLDER
  local config="${STATIC_CONFIG:-tuned}"
  template="$2/$1-$config.conf"
  [[ -f $template ]] || { echo "STATIC_CONFIG=$config: no $template" >&2; exit 2; }
  : "${TLS_CERT:?TLS_CERT must name the PEM certificate}" "${TLS_KEY:?TLS_KEY must name the PEM key}"
  : "${PORT:?PORT must be set}" "${BUILD_DIR:?BUILD_DIR must be set}"
  docroot="${STATIC_ROOT:-$BUILD_DIR/site}"
  # WORKERS unset: the CPUs this process may use.
  workers="${WORKERS:-$(cpus)}"
  worker_user=""
  if [[ $(id -u) -eq 0 ]]; then
    worker_user=www-data
    require_site_readable_by_www_data "$1-static" "$docroot"
  fi
}

# The CPUs this process may use, cgroup-aware: nproc honours the affinity mask
# (taskset, cpuset) and a CFS quota lowers it further, rounded up. This is
# WORKERS when the harness does not set it.
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

# Fail early, with the fix, when www-data cannot read the site.
require_site_readable_by_www_data() { # NAME DOCROOT
  if ! runuser -u www-data -- test -r "$2/index.html"; then
    echo "$1: the workers run as www-data, which cannot read $2/index.html;" \
      "make every folder above it searchable (chmod o+x) or use a BUILD_DIR elsewhere" >&2
    exit 2
  fi
}

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
# shellcheck source=../_shared/static/lib.sh
source "$here/../_shared/static/lib.sh"

# WORKERS unset: the CPUs this process may use (lib.sh).
workers="${WORKERS:-$(cpus)}"

# As root the master hands the workers to www-data (Debian's default user);
# unprivileged, nginx ignores "user" with a warning, so it is left out.
user_line=""
if [[ $(id -u) -eq 0 ]]; then
  user_line="user www-data;"
  require_site_readable_by_www_data nginx-static "$docroot"
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

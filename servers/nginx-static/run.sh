#!/usr/bin/env bash
# Render nginx-$STATIC_CONFIG.conf (tuned by default, or stock) for this run and
# exec nginx in the foreground, so SIGTERM (fast shutdown) and SIGQUIT
# (graceful) reach the master directly.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../_shared/static/lib.sh
source "$here/../_shared/static/lib.sh"
prepare_run nginx "$here" # sets template, docroot, workers and worker_user

# As root the master hands the workers to www-data (worker_user);
# unprivileged, nginx ignores "user" with a warning, so it is left out.
user_line="${worker_user:+user $worker_user;}"

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

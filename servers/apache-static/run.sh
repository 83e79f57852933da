#!/usr/bin/env bash
# Render apache-$STATIC_CONFIG.conf (tuned by default, or stock) for this run
# and exec httpd in the foreground (-DFOREGROUND), so signals reach the parent
# directly: SIGTERM stops at once (exit 0), SIGWINCH would be graceful.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../_shared/static/lib.sh
source "$here/../_shared/static/lib.sh"
prepare_run apache "$here" # sets template, docroot, workers and worker_user

# Started as root, httpd hands its children to www-data (worker_user, Debian's
# APACHE_RUN_USER); unprivileged it keeps its own user and needs no User line.
user_lines="${worker_user:+User $worker_user\nGroup $worker_user}"

# Debian's module .conf files name their runtime folders through these
# variables (/etc/apache2/envvars); here they all point into BUILD_DIR.
export APACHE_RUN_DIR="$BUILD_DIR" APACHE_LOCK_DIR="$BUILD_DIR" APACHE_LOG_DIR="$BUILD_DIR"
export APACHE_PID_FILE="$BUILD_DIR/apache2.pid" LANG=C
mkdir -p "$BUILD_DIR"

sed -e "s|@USER_LINES@|$user_lines|" \
  -e "s|@WORKERS@|$workers|g" \
  -e "s|@MAX_WORKERS@|$((workers * 64))|g" \
  -e "s|@HOST@|${HOST:-0.0.0.0}|" \
  -e "s|@PORT@|$PORT|g" \
  -e "s|@BUILD_DIR@|$BUILD_DIR|g" \
  -e "s|@DOCROOT@|$docroot|g" \
  -e "s|@TLS_CERT@|$TLS_CERT|" \
  -e "s|@TLS_KEY@|$TLS_KEY|" \
  "$template" >"$BUILD_DIR/apache2.conf"
exec apache2 -d /etc/apache2 -f "$BUILD_DIR/apache2.conf" -DFOREGROUND

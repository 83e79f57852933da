#!/usr/bin/env bash
# Build step of every static stack: copy the site into $BUILD_DIR/site and
# precompress it next to the originals: index.html.br (Brotli quality 11) and
# index.html.gz (gzip -9), same mtime as the original. A tuned configuration
# serves these files (nginx: brotli_static and gzip_static; Apache: the
# mod_brotli documentation's mod_rewrite + mod_headers recipe); a stock one
# ignores them and compresses per request.
set -euo pipefail
site="$BUILD_DIR/site"
rm -rf "$site"
mkdir -p "$site"
cp -p "$REPO_ROOT"/contracts/static/index.html "$REPO_ROOT"/contracts/static/style.css "$site/"
for file in "$site"/index.html "$site"/style.css; do
  brotli --quality=11 --keep --force --output="$file.br" "$file"
  gzip -9 --no-name --stdout "$file" >"$file.gz"
  touch --reference="$file" "$file.br" "$file.gz"
done
# The server's workers (www-data when its master runs as root) read the site.
chmod -R a+rX "$site"

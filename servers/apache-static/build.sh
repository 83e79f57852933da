#!/usr/bin/env bash
# Copy the site into $BUILD_DIR/site and precompress it next to the originals:
# index.html.br (Brotli quality 11) and index.html.gz (gzip -9), same mtime as
# the original. The tuned configuration serves these through mod_rewrite and
# mod_headers (the mod_brotli documentation's recipe); the stock one ignores
# them and compresses per request.
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
# Apache's children (www-data when started as root) read the site.
chmod -R a+rX "$site"

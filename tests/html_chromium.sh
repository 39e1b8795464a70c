#!/usr/bin/env bash
# Renders `paraplan rank -o` HTML in headless Chromium and checks the screenshot is a picture
# of a drawn page (a PNG of the full page, not blank). Exit 77 (skipped) without Chromium.
set -euo pipefail
cli=$1 out=$2
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then echo "chromium not installed: skipped"; exit 77; fi
rm -rf "$out" && mkdir -p "$out"
"$cli" rank --nodes 16,32 -o "$out/report" > /dev/null
timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$out/profile" --window-size=1000,3000 --screenshot="$out/report.png" \
  "file://$out/report.html" > "$out/chromium.log" 2>&1 || { cat "$out/chromium.log"; exit 1; }
size=$(stat -c %s "$out/report.png")
# A blank 1000 x 3000 page compresses to a few kilobytes; five drawn plots do not.
if [ "$size" -lt 60000 ]; then echo "screenshot too small ($size bytes): nothing drawn?"; exit 1; fi
echo "rendered $out/report.png ($size bytes)"

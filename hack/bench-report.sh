#!/bin/bash
# Measures how long the HTML report of a 10,000-pod run takes to open in Chromium (Debian's, headless) and its
# size. The page's script marks "kubeslow-charts-drawn" (performance.mark) when every chart is drawn and
# writes performance.now() at that point — milliseconds from navigation start — into the body's
# data-render-ms, which --dump-dom shows. Targets: under 2 s, under 5 MB. Rounds: $ROUNDS (default 5), each
# with a new empty profile; the median is the figure. Each round also opens a baseline page holding only the
# chart library (its parse and start-up, the floor of any page built on it), so that the ratio of the two
# reads the same on a loaded machine. Not part of CI (it times a browser).
#   hack/bench-report.sh [pods]
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH
cd "$(dirname "$0")/.."
pods=${1:-10000}
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
page=$tmp/report.html
KUBESLOW_BENCH_HTML=$page KUBESLOW_BENCH_PODS=$pods go test -count=1 -run '^TestWriteBenchPage$' ./internal/report/ >/dev/null
size=$(stat -c %s "$page")
base=$tmp/baseline.html
{ echo '<!DOCTYPE html><html><body><script>'; cat internal/report/assets/echarts.min.js
  echo '</script><script>document.body.dataset.renderMs = String(Math.round(performance.now()));</script></body></html>'; } >"$base"
baseline() { # page profile -> the page's data-render-ms
	dom=$(unshare -n chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --user-data-dir="$2" --window-size=1280,800 --dump-dom "file://$1" 2>/dev/null)
	grep -o 'data-render-ms="[0-9]*"' <<<"$dom" | grep -o '[0-9]*'
}
ms=()
bs=()
for i in $(seq "$rounds"); do
	b=$(baseline "$base" "$tmp/base-$i")
	dom=$(unshare -n chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --user-data-dir="$tmp/profile-$i" --window-size=1280,800 --dump-dom "file://$page" 2>/dev/null)
	render=$(grep -o 'data-render-ms="[0-9]*"' <<<"$dom" | grep -o '[0-9]*')
	charts=$(grep -o 'data-charts="[0-9]*"' <<<"$dom" | grep -o '[0-9]*')
	errors=$(grep -o 'data-errors="[0-9]*"' <<<"$dom" | grep -o '[0-9]*')
	echo "round $i: report's charts drawn ${render} ms after navigation start ($charts charts, $errors errors); library alone ${b} ms"
	bs+=("$b")
	ms+=("$render")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m=$(median "${ms[@]}")
mb=$(median "${bs[@]}")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
awk -v pods="$pods" -v size="$size" -v m="$m" -v b="$mb" 'BEGIN {
	printf "%d pods: page %.2f MB (%.2fx the 5 MB budget); charts drawn in %d ms, median of the rounds (%.2fx the 2 s budget; %.2fx the %d ms the library alone takes)\n", pods, size/1048576, size/5242880, m, m/2000, m/b, b
}'

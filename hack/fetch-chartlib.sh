#!/bin/bash
# Fetches the HTML report's chart library, Apache ECharts, at the pinned version from the npm registry (npm
# checks the tarball against the registry's integrity hash) and copies its minified build and its licence
# into internal/report/assets/, where go:embed puts them in the binary. The copies are committed: builds and CI
# need no npm. Run it only to change the version (then update ECHARTS_VERSION and the integrity below).
set -euo pipefail
ECHARTS_VERSION=6.1.0
# npm view echarts@6.1.0 dist.integrity
ECHARTS_INTEGRITY=sha512-q0yaFPggC9FUdsWH4blavRWFmxdrIodbkoKNAjJudAI6CA9gNPxHtV2RcZNEepZVlk4yvBYkOkbk6HIVpIyHZA==
cd "$(dirname "$0")/.."
dest=internal/report/assets
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "echarts@$ECHARTS_VERSION" >/dev/null)
tgz="$tmp/echarts-$ECHARTS_VERSION.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$ECHARTS_INTEGRITY" ]; then
	echo "echarts-$ECHARTS_VERSION.tgz: integrity $got, want $ECHARTS_INTEGRITY" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$tmp" package/dist/echarts.min.js package/LICENSE package/NOTICE
mkdir -p "$dest"
cp "$tmp/package/dist/echarts.min.js" "$dest/echarts.min.js"
cp "$tmp/package/LICENSE" "$dest/ECHARTS-LICENSE"
cp "$tmp/package/NOTICE" "$dest/ECHARTS-NOTICE"
echo "$ECHARTS_VERSION" > "$dest/ECHARTS-VERSION"
ls -l "$dest"

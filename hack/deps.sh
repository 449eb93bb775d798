#!/usr/bin/env bash
# Installs what kubeslow's build, lab and tests need on a fresh Debian 12 machine. Idempotent and quick when
# everything is present. Only Debian's package registry and the Go module proxy are used.
set -euo pipefail

# Usage: hack/deps.sh [demo|test]  (default test). `demo` installs what the lab and `kubeslow run --lab`
# need; `test` adds what only the tests and benchmarks use.
#
# The demo's Debian packages: iproute2/util-linux (network namespaces, nsenter, mount), iptables/nftables/
# conntrack (kube-proxy and the network lab), containerd/runc/CNI plugins (real lab nodes), e2fsprogs
# (formatting lab block devices), procps, curl (the lab's health checks).
# The tests' on top: jq (the test summary), wrk/nginx-light/fio (peer tools the benchmarks compare against),
# chromium + a font (the HTML report is tested in a real headless browser), prometheus +
# prometheus-node-exporter (`lab up --prometheus` and the tests of `run --prometheus`: run as lab processes,
# never as the packages' services).
DEMO_PKGS=(iproute2 util-linux procps curl nftables e2fsprogs iptables conntrack containerd runc containernetworking-plugins)
TEST_PKGS=(jq wrk fio nginx-light chromium fonts-dejavu-core prometheus prometheus-node-exporter)
case "${1:-test}" in
  demo) PKGS=("${DEMO_PKGS[@]}") ;;
  test) PKGS=("${DEMO_PKGS[@]}" "${TEST_PKGS[@]}") ;;
  *) echo "usage: hack/deps.sh [demo|test]" >&2; exit 2 ;;
esac

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "hack/deps.sh: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
    exit 1
  fi
  echo "installing Debian packages: ${missing[*]}" >&2
  # No service may be started by the packages' scripts (containerd is run by the lab itself).
  made_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; made_policy=1
  fi
  trap '[ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Go 1.26 is expected at /usr/local/go or on PATH.
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
  echo "hack/deps.sh: Go is not installed (expected /usr/local/go/bin/go, Go 1.26)" >&2
  exit 1
fi

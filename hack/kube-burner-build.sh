#!/usr/bin/env bash
# Sourced by the kube-burner benchmark scripts: builds kube-burner at KUBE_BURNER_VERSION from the Go module
# proxy into the XDG cache (once) and sets KB to its path. Never in CI.
#
# `go install …@version` asks the proxy for the module's version list (to report deprecation), which the proxy
# here refuses (403); downloading the exact version and building inside its module directory does not.
KUBE_BURNER_VERSION=${KUBE_BURNER_VERSION:-v2.7.3}
KB_BIN_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/kubeslow/peers
KB=$KB_BIN_DIR/kube-burner-$KUBE_BURNER_VERSION
if [[ ! -x $KB ]]; then
	mkdir -p "$KB_BIN_DIR"
	kb_dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "github.com/kube-burner/kube-burner/v2@$KUBE_BURNER_VERSION" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
	echo "building kube-burner $KUBE_BURNER_VERSION from $kb_dir" >&2
	(cd "$kb_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/cloud-bulldozer/go-commons/v2/version.Version=$KUBE_BURNER_VERSION" \
		-o "$KB.tmp" ./cmd/kube-burner)
	mv "$KB.tmp" "$KB"
fi
"$KB" version >&2 || true

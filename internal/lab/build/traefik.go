package build

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// TraefikVersion is Traefik's pinned version (`lab up --ingress traefik`): the one K3S ships
// (rancher/mirrored-library-traefik:3.6.13 in K3S's image lists of 2026).
const TraefikVersion = "3.6.13"

// Traefik is Traefik's component name.
const Traefik = "traefik"

// traefikModule is Traefik's module path; its command is ./cmd/traefik.
const traefikModule = "github.com/traefik/traefik/v3"

// traefikStep builds Traefik. Its go.mod has replace directives (forks of go-http-auth, mux and minheap), which
// `go install module@version` refuses; so the module is downloaded and built inside its own directory, where
// its go.mod and go.sum apply as upstream's release builds use them, with the version stamped as its Makefile does.
func traefikStep() buildStep {
	return buildStep{title: "traefik v" + TraefikVersion, components: []string{Traefik}, version: TraefikVersion, build: buildTraefik,
		versionArg: "version", versionWant: "v" + TraefikVersion}
}

func buildTraefik(ctx context.Context, b *builder) error {
	out, err := b.goOutput(ctx, b.dirs.SrcDir(), "mod", "download", "-json", traefikModule+"@v"+TraefikVersion)
	if err != nil {
		return err
	}
	var dl struct{ Dir string }
	if err := json.Unmarshal(out, &dl); err != nil || dl.Dir == "" {
		return fmt.Errorf("go mod download %s: unexpected output: %s", traefikModule, firstLine(out))
	}
	bin := b.binPath(Traefik, TraefikVersion)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	return b.goCmd(ctx, Traefik, dl.Dir, "build", "-ldflags", "-s -w -X "+traefikModule+"/pkg/version.Version=v"+TraefikVersion,
		"-o", bin, "./cmd/traefik")
}

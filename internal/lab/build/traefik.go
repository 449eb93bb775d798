package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// TraefikVersion is Traefik's pinned version (`lab up --ingress traefik`): the one K3S ships
// (rancher/mirrored-library-traefik:3.6.13 in K3S's image lists of 2026).
const TraefikVersion = "3.6.13"

// Traefik is Traefik's component name.
const Traefik = "traefik"

// Module paths: Traefik (its command is ./cmd/traefik) and lego, its ACME client.
const (
	traefikModule = "github.com/traefik/traefik/v3"
	legoModule    = "github.com/go-acme/lego/v4"
	// legoDNSProviders is the file of lego's providers/dns package that imports its ~180 DNS-01 providers (and their
	// cloud SDKs) for NewDNSChallengeProviderByName, the one function Traefik calls there.
	legoDNSProviders = "providers/dns/zz_gen_dns_providers.go"
)

// legoDNSStub replaces legoDNSProviders: every DNS-01 provider name is unknown, as Traefik reports a misspelt one.
const legoDNSStub = `// Package dns: the lab's Traefik build leaves lego's DNS-01 providers out (kubeslow lab build).
package dns

import (
	"fmt"

	"github.com/go-acme/lego/v4/challenge"
)

// NewDNSChallengeProviderByName knows no provider in the lab's build.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("unrecognized DNS provider: %s (the lab's Traefik is built without lego's DNS-01 providers)", name)
}
`

// traefikStep builds Traefik. Its go.mod has replace directives (forks of go-http-auth, mux and minheap), which
// `go install module@version` refuses; so it is built inside its own module directory, where its go.mod and go.sum
// apply as in upstream's release builds, with the version stamped as its Makefile does. One change: lego's DNS-01
// providers are left out (a copy of lego with legoDNSProviders stubbed, through -modfile with one more replace line):
// they are ~900 of Traefik's ~2,300 packages, over an hour of the cold build on the lab's 2-core machines, and ACME
// cannot reach a CA from the lab anyway. Traefik's data path (entry points, routers, the Kubernetes providers, the
// load balancer and its transport) is built unchanged.
func traefikStep() buildStep {
	return buildStep{title: "traefik v" + TraefikVersion, components: []string{Traefik}, version: TraefikVersion, build: buildTraefik,
		versionArg: "version", versionWant: "v" + TraefikVersion, optional: true}
}

func buildTraefik(ctx context.Context, b *builder) error {
	src := filepath.Join(b.dirs.SrcDir(), "traefik-v"+TraefikVersion)
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	tr, err := b.download(ctx, traefikModule, "v"+TraefikVersion)
	if err != nil {
		return err
	}
	upstream, err := os.ReadFile(tr.GoMod)
	if err != nil {
		return err
	}
	legoVersion, err := requiredVersion(upstream, legoModule)
	if err != nil {
		return err
	}
	lg, err := b.download(ctx, legoModule, legoVersion)
	if err != nil {
		return err
	}
	lego := filepath.Join(src, "lego")
	if err := os.CopyFS(lego, os.DirFS(lg.Dir)); err != nil {
		return fmt.Errorf("copying lego: %w", err)
	}
	stubbed := filepath.Join(lego, legoDNSProviders)
	orig, err := os.ReadFile(stubbed)
	if err != nil || !strings.Contains(string(orig), "func NewDNSChallengeProviderByName(") {
		return fmt.Errorf("lego %s has no %s defining NewDNSChallengeProviderByName (%v): upstream changed", legoVersion, legoDNSProviders, err)
	}
	if err := os.Chmod(stubbed, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(stubbed, []byte(legoDNSStub), 0o644); err != nil {
		return err
	}
	gomod, err := TraefikGoMod(upstream, lego)
	if err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(tr.Dir, "go.sum"))
	if err != nil {
		return err
	}
	modPath := filepath.Join(src, "traefik.mod")
	for p, data := range map[string][]byte{modPath: gomod, filepath.Join(src, "traefik.sum"): sum} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	bin := b.binPath(Traefik, TraefikVersion)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	return b.goCmd(ctx, Traefik, tr.Dir, "build", "-modfile", modPath,
		"-ldflags", "-s -w -X "+traefikModule+"/pkg/version.Version=v"+TraefikVersion, "-o", bin, "./cmd/traefik")
}

// downloaded is `go mod download -json`'s answer.
type downloaded struct{ Dir, GoMod string }

func (b *builder) download(ctx context.Context, module, version string) (downloaded, error) {
	out, err := b.goOutput(ctx, b.dirs.SrcDir(), "mod", "download", "-json", module+"@"+version)
	if err != nil {
		return downloaded{}, err
	}
	var dl downloaded
	if err := json.Unmarshal(out, &dl); err != nil || dl.Dir == "" || dl.GoMod == "" {
		return downloaded{}, fmt.Errorf("go mod download %s: unexpected output: %s", module, firstLine(out))
	}
	return dl, nil
}

// requiredVersion is the version of module that go.mod requires.
func requiredVersion(gomod []byte, module string) (string, error) {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("go.mod does not require %s", module)
}

// TraefikGoMod is Traefik's go.mod with lego replaced by the directory lego (pure); it fails if Traefik's go.mod
// does not require lego or already replaces it.
func TraefikGoMod(upstream []byte, lego string) ([]byte, error) {
	f, err := modfile.Parse("go.mod", upstream, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing traefik's go.mod: %w", err)
	}
	if f.Module == nil || f.Module.Mod.Path != traefikModule {
		return nil, errors.New("not traefik's go.mod")
	}
	if _, err := requiredVersion(upstream, legoModule); err != nil {
		return nil, err
	}
	for _, r := range f.Replace {
		if r.Old.Path == legoModule {
			return nil, fmt.Errorf("traefik's go.mod already replaces %s: upstream changed", legoModule)
		}
	}
	if err := f.AddReplace(legoModule, "", lego, ""); err != nil {
		return nil, err
	}
	return f.Format()
}

package build

import (
	"slices"
	"strings"
	"testing"
)

// TestTraefikGoMod: lego is replaced by the local copy and upstream's replace lines stay; a go.mod that is not
// Traefik's, lacks lego or already replaces it is refused (an upstream change is noticed, not built around).
func TestTraefikGoMod(t *testing.T) {
	up := "module github.com/traefik/traefik/v3\n\ngo 1.25.0\n\nrequire github.com/go-acme/lego/v4 v4.33.0\n\n" +
		"replace github.com/gorilla/mux => github.com/containous/mux v0.0.0-20250523120546-41b6ec3aed59\n"
	out, err := TraefikGoMod([]byte(up), "/cache/src/traefik-v3.6.13/lego")
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.Contains(s, "github.com/go-acme/lego/v4 => /cache/src/traefik-v3.6.13/lego") || !strings.Contains(s, "github.com/gorilla/mux => github.com/containous/mux") {
		t.Errorf("go.mod:\n%s", s)
	}
	if v, err := requiredVersion([]byte(up), legoModule); err != nil || v != "v4.33.0" {
		t.Errorf("lego version %q %v", v, err)
	}
	for _, bad := range []string{
		strings.Replace(up, "traefik/traefik/v3", "other/x", 1),
		strings.Replace(up, "require github.com/go-acme/lego/v4 v4.33.0\n", "", 1),
		up + "replace github.com/go-acme/lego/v4 => ../lego\n",
	} {
		if _, err := TraefikGoMod([]byte(bad), "/x"); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

// Traefik and flanneld are optional: the default build (a demo's bridge lab) leaves them out, and asking for an
// unknown optional component is an error.
func TestOptionalTraefik(t *testing.T) {
	if got := Optional(); !slices.Equal(got, []string{Flannel, Traefik}) {
		t.Fatalf("optional components %v, want [%s %s]", got, Flannel, Traefik)
	}
	for _, s := range buildSteps() {
		if !s.optional && (slices.Contains(s.components, Traefik) || slices.Contains(s.components, Flannel)) {
			t.Fatalf("%v built by default", s.components)
		}
	}
	if _, err := Build(t.Context(), Cache{Dir: t.TempDir()}, func(string, ...any) {}, "nginx"); err == nil || !strings.Contains(err.Error(), "no optional lab component") {
		t.Fatalf("unknown optional component: %v", err)
	}
}

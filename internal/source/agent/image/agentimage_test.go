package agentimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubeslow/kubeslow/internal/source/agent/image"
	"github.com/kubeslow/kubeslow/internal/source/agent/image/agentimagetest"
)

// testRegistry is go-containerregistry's registry on loopback that wants basic credentials user:secret, and
// counts the manifests pushed to it.
func testRegistry(t *testing.T) (host string, manifests *atomic.Int32) {
	t.Helper()
	reg := registry.New()
	manifests = new(atomic.Int32)
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:secret"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
			manifests.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	// The credentials as `docker login` leaves them, where authn.DefaultKeychain looks.
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("user:secret"))}}})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	return host, manifests
}

func TestPushAndPullBack(t *testing.T) {
	host, manifests := testRegistry(t)
	bin := agentimagetest.WriteELF(t, elf.EM_X86_64, false)
	ref := host + "/tools/kubeslow:dev"
	dg, err := agentimage.Push(context.Background(), ref, agentimage.PushOptions{Binary: bin, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dg.String(), host+"/tools/kubeslow@sha256:") || manifests.Load() != 1 {
		t.Fatalf("pushed %s, %d manifests", dg, manifests.Load())
	}
	// Pulled back by the printed digest, with the same credentials: the tag names the same image.
	tag, _ := name.NewTag(ref, name.Insecure)
	if _, err := remote.Head(tag); err == nil {
		t.Fatal("the registry answered without credentials")
	}
	img, err := remote.Image(dg, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		t.Fatal(err)
	}
	if byTag, err := remote.Head(tag, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil || byTag.Digest.String() != dg.DigestStr() {
		t.Fatalf("tag %s: %v, %v", ref, byTag, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !slices.Equal(cf.Config.Entrypoint, []string{"/kubeslow"}) {
		t.Fatalf("config: %s/%s entrypoint %q", cf.OS, cf.Architecture, cf.Config.Entrypoint)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	mf, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if mf.MediaType != types.OCIManifestSchema1 || mf.Config.MediaType != types.OCIConfigJSON || len(mf.Layers) != 1 || mf.Layers[0].MediaType != types.OCILayer {
		t.Fatalf("manifest %s, config %s, layers %+v: want OCI throughout, one gzipped layer", mf.MediaType, mf.Config.MediaType, mf.Layers)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	want, _ := os.ReadFile(bin)
	found := false
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "kubeslow" {
			got, _ := io.ReadAll(tr)
			found = bytes.Equal(got, want) && h.Mode&0o111 != 0
		}
	}
	if !found {
		t.Fatal("the layer lacks the executable binary at /kubeslow")
	}
	// The same binary gives the same image: pushed again, the same digest.
	again, err := agentimage.Push(context.Background(), ref, agentimage.PushOptions{Binary: bin, Insecure: true})
	if err != nil || again != dg {
		t.Fatalf("pushed again: %s (%v), first %s", again, err, dg)
	}
}

func TestPushRefusesWhatCannotRun(t *testing.T) {
	host, manifests := testRegistry(t)
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, binary, platform, want string
	}{
		{"dynamic", agentimagetest.WriteELF(t, elf.EM_X86_64, true), "", "dynamically linked"},
		{"other machine", agentimagetest.WriteELF(t, elf.EM_X86_64, false), "linux/arm64", "GOARCH=arm64"},
		{"not ELF", notELF, "", "not an ELF binary"},
		{"bad platform", agentimagetest.WriteELF(t, elf.EM_X86_64, false), "windows/amd64", "want linux/amd64 or linux/arm64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := agentimage.Push(context.Background(), host+"/kubeslow:dev", agentimage.PushOptions{Binary: c.binary, Platform: c.platform, Insecure: true})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
	if _, err := agentimage.Push(context.Background(), "Not A Reference", agentimage.PushOptions{Binary: agentimagetest.WriteELF(t, elf.EM_X86_64, false)}); err == nil {
		t.Fatal("a bad reference was accepted")
	}
	if n := manifests.Load(); n != 0 {
		t.Fatalf("%d manifests pushed for refused binaries", n)
	}
	// An arm64 binary for linux/arm64 is fine.
	dg, err := agentimage.Push(context.Background(), host+"/kubeslow:arm", agentimage.PushOptions{Binary: agentimagetest.WriteELF(t, elf.EM_AARCH64, false), Platform: "linux/arm64", Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(dg, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		t.Fatal(err)
	}
	if cf, err := img.ConfigFile(); err != nil || cf.Architecture != "arm64" {
		t.Fatalf("arm64 image: %v %v", cf, err)
	}
}

func TestDefaultFor(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.3":            agentimage.Repository + ":v1.2.3",
		"v0.4.0-rc.1":       agentimage.Repository + ":v0.4.0-rc.1",
		"dev":               "",
		"2c805f0":           "",
		"2c805f0-dirty":     "",
		"v1.2.3-dirty":      "",
		"v1.2.3-4-g2c805f0": "",
		"v1.2":              "",
		"v1.2.3+build.5":    "",
		"":                  "",
	} {
		if got := agentimage.DefaultFor(v); got != want {
			t.Errorf("DefaultFor(%q) = %q, want %q", v, got, want)
		}
	}
}

func FuzzDefaultFor(f *testing.F) {
	for _, s := range []string{"v1.2.3", "v1.2.3-rc.1", "dev", "v1.2.3-1-gabc-dirty", "v1.2.3+x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := agentimage.DefaultFor(v)
		if got == "" {
			return
		}
		if got != agentimage.Repository+":"+v {
			t.Fatalf("DefaultFor(%q) = %q", v, got)
		}
		if _, err := name.NewTag(got, name.StrictValidation); err != nil {
			t.Fatalf("DefaultFor(%q) = %q, not a valid reference: %v", v, got, err)
		}
	})
}

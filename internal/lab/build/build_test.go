package build

import (
	"go/format"
	"os"
	"strings"
	"testing"
)

func TestKubernetesScratchGoMod(t *testing.T) {
	upstream := []byte(`module k8s.io/kubernetes

go 1.25.0

require k8s.io/api v0.0.0

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/foo/bar => github.com/foo/bar v1.2.3
)
`)
	out, err := kubernetesScratchGoMod(upstream, "1.36.3")
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"module kubeslow.lab/k8s", "require k8s.io/kubernetes v1.36.3", "k8s.io/api => k8s.io/api v0.36.3", "k8s.io/client-go => k8s.io/client-go v0.36.3"} {
		if !strings.Contains(s, want) {
			t.Errorf("scratch go.mod lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "foo/bar") {
		t.Errorf("non-staging replace copied:\n%s", s)
	}
	if _, err := kubernetesScratchGoMod([]byte("module x\n"), "1.36.3"); err == nil {
		t.Error("a go.mod without staging replaces was accepted")
	}
	if _, err := kubernetesScratchGoMod([]byte("garbage ((("), "1.36.3"); err == nil {
		t.Error("garbage accepted")
	}
}

// TestCoreDNSMain: the lab CoreDNS's main is gofmt'd Go that imports coremain and each plugin once, not
// core/plugin (which imports all of upstream's).
func TestCoreDNSMain(t *testing.T) {
	src := corednsMain()
	if out, err := format.Source(src); err != nil || string(out) != string(src) {
		t.Fatalf("not gofmt'd Go (%v):\n%s", err, src)
	}
	s := string(src)
	for _, p := range CoreDNSPlugins {
		if n := strings.Count(s, "\"github.com/coredns/coredns/plugin/"+p+"\"\n"); n != 1 {
			t.Errorf("plugin %s imported %d times", p, n)
		}
	}
	if !strings.Contains(s, "\"github.com/coredns/coredns/coremain\"") || strings.Contains(s, "core/plugin") {
		t.Errorf("main:\n%s", s)
	}
}

// TestGoEnv: the Go tool's environment overrides what would change the lab's binaries (GOFLAGS, CGO_ENABLED, the
// caches, the toolchain) whatever the caller's, and gives the compiler compileGOGC unless the caller set GOGC.
func TestGoEnv(t *testing.T) {
	get := func(env []string, key string) (string, int) {
		v, n := "", 0
		for _, kv := range env {
			if k, val, _ := strings.Cut(kv, "="); k == key {
				v, n = val, n+1
			}
		}
		return v, n
	}
	d := Cache{Dir: "/cache"}
	t.Setenv("GOFLAGS", "-race")
	t.Setenv("CGO_ENABLED", "1")
	t.Setenv("GOCACHE", "/elsewhere")
	t.Setenv("GOGC", "") // the caller's, restored at the test's end
	os.Unsetenv("GOGC")
	env := goEnv(d)
	for key, want := range map[string]string{"GOFLAGS": "-trimpath -buildvcs=false -modcacherw -gcflags=all=-dwarf=false", "CGO_ENABLED": "0",
		"GOCACHE": d.GoBuildCache(), "GOMODCACHE": d.GoModCache(), "GOTOOLCHAIN": "local", "GOGC": compileGOGC} {
		if got, n := get(env, key); got != want || n != 1 {
			t.Errorf("%s=%q (%d times), want %q once", key, got, n, want)
		}
	}
	t.Setenv("GOGC", "50")
	if got, n := get(goEnv(d), "GOGC"); got != "50" || n != 1 {
		t.Errorf("with GOGC=50 set: GOGC=%q (%d times), want the caller's once", got, n)
	}
}

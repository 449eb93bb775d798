package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/cli/common"
)

func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), common.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestVersionJSON(t *testing.T) {
	code, out, _ := runArgs(t, "version", "-o", "json")
	var v struct{ Version, GoVersion string }
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || v.GoVersion == "" {
		t.Fatalf("version -o json: code %d, %q", code, out)
	}
	if code, _, errOut := runArgs(t, "version", "-o", "yaml"); code != 2 || !strings.Contains(errOut, "unknown output format") {
		t.Fatalf("bad -o: code %d, %q", code, errOut)
	}
}

func TestRunBadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "garbled")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nclusters: [[[\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runArgs(t, "run", "--kubeconfig", bad)
	if code != 2 || out != "" || !strings.Contains(errOut, "kubeconfig") {
		t.Fatalf("garbled kubeconfig: code %d stdout %q stderr %q", code, out, errOut)
	}
	code, _, errOut = runArgs(t, "run", "--kubeconfig", filepath.Join(dir, "missing"))
	if code != 2 || !strings.Contains(errOut, "no such file") {
		t.Fatalf("missing kubeconfig: code %d stderr %q", code, errOut)
	}
}

func TestRunUnreachableCluster(t *testing.T) {
	// A kubeconfig pointing at a loopback port nothing listens on.
	kc := filepath.Join(t.TempDir(), "kc")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runArgs(t, "run", "--kubeconfig", kc, "-o", "json", "--out-dir", t.TempDir())
	if code != 2 || out != "" || !strings.Contains(errOut, "cannot reach the apiserver") {
		t.Fatalf("unreachable: code %d stdout %q stderr %q", code, out, errOut)
	}
}

func TestUnknownMeasurement(t *testing.T) {
	code, _, errOut := runArgs(t, "run", "--only", "nope")
	if code != 2 || !strings.Contains(errOut, "unknown measurement") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
}

// TestReportAndDiff: a saved report re-renders in every format; a garbled one is a clear error (exit 2);
// diff exits 1 on a regression and 0 on none.
func TestReportAndDiff(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	doc := `{"apiVersion":"kubeslow.dev/v1alpha1","kind":"Report","runID":"a","tool":{"name":"kubeslow","version":"t"},
"cluster":{"name":"c","server":"s","nodes":{"total":1,"ready":1}},"start":"2026-11-23T00:00:00Z","end":"2026-11-23T00:01:00Z",
"results":[{"name":"api.responsiveness","status":"Pass","metrics":[{"name":"latency_p99_single","unit":"seconds","value":0.1}]}],"findings":[]}`
	if err := os.WriteFile(a, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	for format, want := range map[string]string{"text": "latency_p99_single", "json": `"runID": "a"`, "html": "<!DOCTYPE html>", "junit": "<testsuites"} {
		code, out, errOut := runArgs(t, "report", a, "-o", format)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("report -o %s: code %d, stderr %q, output lacks %q", format, code, errOut, want)
		}
	}
	garbled := filepath.Join(dir, "g.json")
	if err := os.WriteFile(garbled, []byte(doc[:100]), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runArgs(t, "report", garbled); code != 2 || out != "" || !strings.Contains(errOut, "g.json") {
		t.Errorf("garbled report: code %d stdout %q stderr %q", code, out, errOut)
	}
	b := filepath.Join(dir, "b.json")
	if err := os.WriteFile(b, []byte(strings.Replace(doc, `"value":0.1`, `"value":0.9`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runArgs(t, "diff", a, b); code != 1 || !strings.Contains(out, "REGRESSIONS: 1") {
		t.Errorf("diff with a regression: code %d\n%s", code, out)
	}
	if code, out, _ := runArgs(t, "diff", b, a, "-o", "json"); code != 0 || !strings.Contains(out, `"Ratio"`) {
		t.Errorf("diff with an improvement: code %d\n%s", code, out)
	}
}

// `agent burn --for D` ends by itself with exit 0 (the init container of the explain integration test); a
// burn without it runs until stopped.
func TestAgentBurnFor(t *testing.T) {
	code, out, errOut := runArgs(t, "agent", "burn", "--for", "50ms")
	if code != 0 || !strings.Contains(out, "burning: 0 threads") {
		t.Fatalf("agent burn --for 50ms: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := runArgs(t, "agent", "burn", "--for", "soon"); code == 0 {
		t.Fatalf("agent burn --for soon: exit 0 (%s)", errOut)
	}
}

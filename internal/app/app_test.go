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

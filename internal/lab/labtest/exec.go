package labtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary builds the kubeslow binary statically (as `make build` does) once per test process and returns its
// path: the lab packs it into its images.
func Binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		// The module's root from the working directory (a test's is its package's): `make test` compiles
		// with -trimpath, where the source file's own path (runtime.Caller) is no longer a path on disk.
		out, err := exec.Command("go", "env", "GOMOD").Output()
		gomod := strings.TrimSpace(string(out))
		if err != nil || !filepath.IsAbs(gomod) || gomod == os.DevNull { // outside a module: /dev/null
			binErr = fmt.Errorf("finding the module's root (go env GOMOD: %q): %v", gomod, err)
			return
		}
		root := filepath.Dir(gomod)
		// One slot per source tree under the build cache (a temporary directory per test process left a
		// 78 MB binary behind each time): built beside it and renamed over it, so a test process reading
		// the previous binary keeps its file.
		d, err := lab.DefaultDirs()
		if err != nil {
			binErr = err
			return
		}
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(d.Cache, "testbin", hex.EncodeToString(sum[:6]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "kubeslow")
		tmp := fmt.Sprintf("%s.%d", binPath, os.Getpid())
		cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, "./cmd/kubeslow")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			_ = os.Remove(tmp)
			binErr = &buildError{err: err, out: string(out)}
			return
		}
		binErr = os.Rename(tmp, binPath)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "building kubeslow: " + e.err.Error() + "\n" + e.out }

// Exec runs a command in a pod's container through the apiserver (as kubectl exec does).
func Exec(ctx context.Context, cfg *rest.Config, c kubernetes.Interface, ns, pod string, command ...string) (stdout, stderr string, err error) {
	return kube.Exec(ctx, cfg, c, ns, pod, command...)
}

package labtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeslow/kubeslow/internal/kube"
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
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "kubeslow-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "kubeslow")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, "./cmd/kubeslow")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = &buildError{err: err, out: string(out)}
		}
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

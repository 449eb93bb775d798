package measure_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/kubeslow/kubeslow/"

// goList runs `go list -f format patterns...` from the module's root and returns its lines.
func goList(t *testing.T, format string, patterns ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the packages' imports: %v", err)
	}
	cmd := exec.Command(gobin, append([]string{"list", "-f", format}, patterns...)...)
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func isLab(pkg string) bool {
	return pkg == module+"internal/lab" || strings.HasPrefix(pkg, module+"internal/lab/")
}

// TestNoLabImports: a measurement and the findings engine learn about a cluster only from the cluster (the
// API, the kubelet through the node proxy, the node agent, a Prometheus) and from the user's flags, so
// kubeslow's own lab is measured as any other cluster. No package of the flow (internal/source, internal/measure,
// internal/bench, internal/engine, internal/report, and the ground: internal/rule, internal/stats) may depend on internal/lab (which holds labtest and netlab
// too), directly or through another package (their tests may use the lab as a fixture: `go list` without -test
// reads the code that ships). And the dependency runs one way: the lab's own code imports no measurement.
func TestNoLabImports(t *testing.T) {
	lines := goList(t, `{{.ImportPath}} {{join .Deps " "}}`, "./internal/source/...", "./internal/measure/...",
		"./internal/bench/...", "./internal/engine/...", "./internal/report/...", "./internal/rule/...", "./internal/stats/...")
	if len(lines) < 40 {
		t.Fatalf("go list found %d packages under internal/source, measure, bench, engine and report, want them all", len(lines))
	}
	for _, l := range lines {
		f := strings.Fields(l)
		for _, dep := range f[1:] {
			if isLab(dep) {
				t.Errorf("%s depends on %s: measurements must not read the lab", strings.TrimPrefix(f[0], module), strings.TrimPrefix(dep, module))
			}
		}
	}
	// The lab's own packages import no measurement directly. (The lab imports internal/source/agent/proto for the
	// agent image's command lines: a source, below every measurement.)
	for _, l := range goList(t, `{{.ImportPath}} {{join .Imports " "}}`, "./internal/lab/...") {
		f := strings.Fields(l)
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module+"internal/measure") || strings.HasPrefix(imp, module+"internal/bench") ||
				strings.HasPrefix(imp, module+"internal/engine/check") {
				t.Errorf("%s imports %s: the lab must not depend on a measurement (move the shared code to a neutral package such as internal/source/hostfs)",
					strings.TrimPrefix(f[0], module), strings.TrimPrefix(imp, module))
			}
		}
	}
}

// TestNoLabState: no code under internal/measure, internal/bench or internal/engine/check names the lab's own
// state: its network namespace and cgroup parent ("kubeslow-lab"), e.g. a PromQL selector of the lab's cgroup
// put into every user's queries.
func TestNoLabState(t *testing.T) {
	for _, root := range []string{".", filepath.Join("..", "bench"), filepath.Join("..", "engine", "check")} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte("kubeslow-lab")) {
				t.Errorf("%s names the lab's state (kubeslow-lab)", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

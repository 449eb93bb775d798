// Package labtest helps integration tests that run the real lab: it gates them, isolates their state and
// checks that teardown leaves nothing behind.
package labtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/lab"
)

// EnvVar enables the integration tests (they need root and build the lab, minutes when cold).
const EnvVar = "KUBESLOW_INTEGRATION"

// Dirs skips the test unless integration tests are enabled, fails it if a lab is already up (there is one
// lab per machine: its network namespace has a fixed name), and returns directories with the shared build
// cache and a fresh state directory.
func Dirs(t *testing.T) lab.Dirs {
	t.Helper()
	if os.Getenv(EnvVar) == "" {
		t.Skipf("integration test: set %s=1 (needs root; builds the lab on first use)", EnvVar)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("%s is set but the lab needs root", EnvVar)
	}
	if _, err := os.Stat("/run/netns/" + lab.NetNS); err == nil {
		t.Fatalf("a lab is already up on this machine (network namespace %s): run `kubeslow lab down` first", lab.NetNS)
	}
	d, err := lab.DefaultDirs()
	if err != nil {
		t.Fatal(err)
	}
	state, err := os.MkdirTemp("", "kubeslow-lab-test-")
	if err != nil {
		t.Fatal(err)
	}
	d.State = filepath.Join(state, "lab")
	t.Cleanup(func() { _ = os.Remove(state) })
	return d
}

// Process is a lab process as recorded at start.
type Process struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartTick uint64 `json:"startTick"`
}

// Processes reads the lab's process records.
func Processes(t *testing.T, d lab.Dirs) []Process {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(d.ProcDir(), "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Process
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p Process
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// AssertGone checks that no recorded process runs, nothing is mounted under the state directory, the network
// namespace, host link and cgroups are gone, and the state directory is removed.
func AssertGone(t *testing.T, d lab.Dirs, procs []Process) {
	t.Helper()
	for _, p := range procs {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID)); err == nil {
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if len(f) > 19 && f[19] == fmt.Sprint(p.StartTick) {
				t.Errorf("process %s (pid %d) still exists (state %s)", p.Name, p.PID, f[0])
			}
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mi), d.State) {
		t.Errorf("mounts left under %s", d.State)
	}
	for _, path := range []string{"/run/netns/" + lab.NetNS, "/sys/class/net/" + lab.HostVeth, d.State,
		"/sys/fs/cgroup/pids/kubeslow-lab", "/sys/fs/cgroup/unified/kubeslow-lab"} {
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s still exists after lab down", path)
		}
	}
}

package ebpf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCgroup2Mount(t *testing.T) {
	hybrid := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	for name, tc := range map[string]struct {
		mountinfo, want string
		ok              bool
	}{
		"hybrid": {hybrid, "/sys/fs/cgroup/unified", true},
		"v2 with optional fields": {"29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			"/sys/fs/cgroup", true},
		// A bind mount of a sub-cgroup first, then the hierarchy's root: the root.
		"root preferred": {"50 23 0:26 /kubepods /mnt/pods rw - cgroup2 cgroup2 rw\n60 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			"/sys/fs/cgroup", true},
		"only a sub-cgroup": {"50 23 0:26 /kubepods /mnt/pods rw - cgroup2 cgroup2 rw\n", "/mnt/pods", true},
		"escaped":           {`60 23 0:26 / /run/my\040cgroup rw - cgroup2 cgroup2 rw` + "\n", "/run/my cgroup", true},
		"v1 only":           {"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n", "", false},
		"a mount named -":   {"32 31 0:29 / /- rw - ext4 /dev/sda rw\n", "", false},
		"broken":            {"cgroup2\n- cgroup2\n", "", false},
	} {
		got, ok := cgroup2Mount(tc.mountinfo)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCgroupDirs(t *testing.T) {
	if err := checkCgroup2Dir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a cgroup v2 directory") {
		t.Errorf("a temporary directory: %v", err)
	}
	if err := checkCgroup2Dir("/nonexistent/kubeslow"); err == nil {
		t.Error("a missing directory: no error")
	}
	if _, err := CgroupID("/nonexistent/kubeslow"); err == nil {
		t.Error("CgroupID of a missing directory: no error")
	}
	root, err := CgroupRoot()
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	if err := checkCgroup2Dir(root); err != nil {
		t.Errorf("the cgroup2 mount %s: %v", root, err)
	}
	if _, err := os.Stat(root + "/cgroup.procs"); err != nil {
		t.Errorf("the cgroup2 mount %s has no cgroup.procs: %v", root, err)
	}
	if id, err := CgroupID(root); err != nil || id == 0 {
		t.Errorf("the root's id: %d %v", id, err)
	}
}

// TestHostCgroupRoot: the host's pid 1 mountinfo, its cgroup2 mount mapped under the agent's host root; a
// v1-only host and a missing procfs say why.
func TestHostCgroupRoot(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(proc, "1", "mountinfo"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")
	if dir, err := HostCgroupRoot(proc, "/host"); err != nil || dir != "/host/sys/fs/cgroup/unified" {
		t.Errorf("hybrid: %q %v", dir, err)
	}
	write("32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n")
	if _, err := HostCgroupRoot(proc, "/host"); err == nil || !strings.Contains(err.Error(), "v1-only") {
		t.Errorf("v1 only: %v", err)
	}
	if _, err := HostCgroupRoot(filepath.Join(proc, "none"), "/host"); err == nil || !strings.Contains(err.Error(), "cannot read the host's mounts") {
		t.Errorf("no procfs: %v", err)
	}
}

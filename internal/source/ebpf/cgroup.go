package ebpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// mountinfoPath is read for the cgroup2 mount: this process's own view (a container's cgroup namespace and
// mounts, not the host's).
const mountinfoPath = "/proc/self/mountinfo"

// CgroupRoot returns where the cgroup v2 hierarchy is mounted, from /proc/self/mountinfo: /sys/fs/cgroup on a
// cgroup v2 host, /sys/fs/cgroup/unified on a hybrid one (v1 controllers beside an empty v2 hierarchy), or
// wherever a node agent mounted it. Attached there, the DNS tracer sees every socket of the host (its
// programs run for the cgroup's descendants too). It says why when there is none (a v1-only host).
func CgroupRoot() (string, error) {
	mi, err := os.ReadFile(mountinfoPath)
	if err != nil {
		return "", fmt.Errorf("cannot read %s to find the cgroup v2 mount: %w", mountinfoPath, err)
	}
	dir, ok := cgroup2Mount(string(mi))
	if !ok {
		return "", errors.New("no cgroup v2 hierarchy is mounted (no cgroup2 line in " + mountinfoPath + "): a cgroup v1-only host, or the mount is not visible here")
	}
	return dir, nil
}

// HostCgroupRoot is CgroupRoot for a host seen under root (a node agent's /host): the cgroup v2 mount of the
// host's pid 1, from proc/1/mountinfo (proc: the host's procfs), as a path under root. The agent's own
// mountinfo shows its container's mounts, not the host's; the host's /sys mounted under root carries the
// host's cgroup mounts with it (/sys/fs/cgroup/unified on a hybrid host). It says why when the host has none.
func HostCgroupRoot(proc, root string) (string, error) {
	path := filepath.Join(proc, "1", "mountinfo")
	mi, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the host's mounts (%s) to find its cgroup v2 hierarchy: %w", path, err)
	}
	dir, ok := cgroup2Mount(string(mi))
	if !ok {
		return "", fmt.Errorf("the host mounts no cgroup v2 hierarchy (no cgroup2 line in %s): a cgroup v1-only host", path)
	}
	return filepath.Join(root, dir), nil
}

// cgroup2Mount returns the mount point of the first cgroup2 mount of mountinfo that shows the hierarchy's
// root (field 4 is "/"; a bind mount of a sub-cgroup would hide its siblings); any cgroup2 mount when none
// does, as in a container whose cgroup namespace makes its own cgroup the root it sees.
func cgroup2Mount(mountinfo string) (string, bool) {
	var other string
	for line := range strings.Lines(mountinfo) {
		// "36 35 98:0 /root /mnt rw,noatime master:1 - cgroup2 cgroup2 rw": the optional fields end at "-".
		f := strings.Fields(line)
		sep := -1
		for i, w := range f {
			if w == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) || f[sep+1] != "cgroup2" {
			continue
		}
		dir := unescapeMountinfo(f[4])
		if f[3] == "/" {
			return dir, true
		}
		if other == "" {
			other = dir
		}
	}
	return other, other != ""
}

// unescapeMountinfo undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMountinfo(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// checkCgroup2Dir says why dir cannot take cgroup v2 programs: not a directory, or not on a cgroup2 file
// system (a v1 hierarchy's directory, /sys/fs/cgroup's tmpfs on a hybrid host).
func checkCgroup2Dir(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("cannot use %s as the DNS tracer's cgroup: %w", dir, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return fmt.Errorf("%s is not a cgroup v2 directory (file system magic %#x): the DNS programs attach to the cgroup v2 hierarchy only (CgroupRoot finds it)", dir, st.Type)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// CgroupID is the cgroup v2 id of dir, a directory of the cgroup v2 hierarchy: its inode number, what
// bpf_skb_cgroup_id and bpf_get_current_cgroup_id return for the sockets and tasks in it (and so what a
// pod's container directory maps to).
func CgroupID(dir string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, fmt.Errorf("cannot read the cgroup id of %s: %w", dir, err)
	}
	return st.Ino, nil
}

package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// CgroupParent is the lab's cgroup in every hierarchy: every process the lab starts, and every container of
// its real nodes, lives below it, so that teardown finds them all.
const CgroupParent = "kubeslow-lab"

// processHierarchies are the cgroup hierarchies every lab process joins: pids (to find every descendant at
// teardown) and blkio (so that scenarios can throttle one component's disk I/O).
var processHierarchies = []string{"pids", "blkio"}

// ProcessCgroups creates and returns the process's own cgroups, kubeslow-lab/<name> in each hierarchy that
// exists (the cgroup2 mount when there is no v1 pids hierarchy).
func ProcessCgroups(name string) ([]string, error) {
	var out []string
	for _, h := range processHierarchies {
		root := filepath.Join("/sys/fs/cgroup", h)
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			continue
		}
		out = append(out, filepath.Join(LabCgroup(root), name))
	}
	if len(out) == 0 {
		if root := CgroupRoot(); root != "" {
			out = append(out, filepath.Join(LabCgroup(root), name))
		}
	}
	for _, cg := range out {
		if err := os.MkdirAll(cg, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", cg, err)
		}
	}
	return out, nil
}

// ProcessCgroup returns the directory of a lab process's cgroup in the given hierarchy ("blkio", "pids").
func ProcessCgroup(hierarchy, name string) string {
	return filepath.Join(LabCgroup(filepath.Join("/sys/fs/cgroup", hierarchy)), name)
}

// CgroupRoot returns the hierarchy the lab puts its processes in (to find every descendant at teardown):
// the cgroup v1 pids hierarchy, else the cgroup2 mount; "" when neither exists.
func CgroupRoot() string {
	for _, p := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
			return p
		}
	}
	return ""
}

// LabCgroup is the lab's parent cgroup in hierarchy root.
func LabCgroup(root string) string { return filepath.Join(root, CgroupParent) }

// KillCgroup kills every process still in the cgroup dir (descendants of what the lab started, e.g.
// container shims) and removes the directory. Only PIDs listed in the lab's own cgroup are signalled.
func KillCgroup(ctx context.Context, dir string) error {
	for attempt := 0; ; attempt++ {
		pids, err := hostfs.CgroupProcs(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		if attempt == 5 {
			return fmt.Errorf("cgroup %s still has processes %v", dir, pids)
		}
		for _, pid := range pids {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			waitPidfd(fd, 5*time.Second)
			unix.Close(fd)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	// Children first.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			if err := KillCgroup(ctx, filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing cgroup %s: %w", dir, err)
	}
	return nil
}

// Hierarchies are the mounted cgroup v1 hierarchies (plus the cgroup2 mount), where the kubelet makes its pod
// cgroups below --cgroup-root.
func Hierarchies() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// EnsureCgroupPath creates rel (e.g. "/kubeslow-lab/pods-lab-node-1") in every hierarchy. In the cpuset
// hierarchy each new level needs its CPUs and memory nodes before a task may join.
func EnsureCgroupPath(rel string) error {
	for _, h := range Hierarchies() {
		cur := h
		for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
			parent := cur
			cur = filepath.Join(cur, part)
			if err := os.MkdirAll(cur, 0o755); err != nil {
				return err
			}
			if filepath.Base(h) == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					b, err := os.ReadFile(filepath.Join(parent, f))
					if err != nil {
						return err
					}
					if cur, _ := os.ReadFile(filepath.Join(cur, f)); strings.TrimSpace(string(cur)) != "" {
						continue
					}
					if err := os.WriteFile(filepath.Join(cur, f), b, 0o644); err != nil {
						return fmt.Errorf("%s: %w", filepath.Join(cur, f), err)
					}
				}
			}
		}
	}
	return nil
}

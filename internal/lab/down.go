package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// Down stops every process the lab started (by recorded PID; the plan's components in reverse, see stopOrder), kills what is left in its cgroups, unmounts
// what it mounted, deletes its network namespace and removes its state directory. It is safe on a lab that
// is partly up, already down, or was never started. Errors are collected: one failure does not stop the rest
// of the teardown.
func Down(ctx context.Context, d Dirs, progress Progress) error {
	var errs []error
	st, stErr := d.loadState()
	recs, err := d.procs().All()
	if err != nil {
		errs = append(errs, err)
	}
	// Real nodes first, gracefully: kubelet off, then containerd removes its containers while it still runs.
	// Node 0 is the kubeadm layout's control-plane node: its kubelet stops first, then its containerd kills
	// the static pods' containers (etcd, kube-apiserver, ...).
	nodeIDs := map[int][]string{}
	for i := 0; i <= MaxRealNodes; i++ {
		nodeIDs[i] = nodeContainerIDs(d, i)
		drainNode(ctx, d, i, progress)
	}
	byName := map[string]*host.Process{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	var names []string
	for _, r := range recs {
		names = append(names, r.Name)
	}
	for _, n := range stopOrder(st, names) {
		r := byName[n]
		grace := 10 * time.Second
		if n == KubeAPIServer {
			grace = 20 * time.Second // graceful shutdown drains requests; nothing to save in the lab
		}
		wasAlive := r.Alive()
		if err := r.Stop(grace); err != nil {
			errs = append(errs, err)
			continue
		}
		if wasAlive {
			progress("stopped %s (pid %d)", n, r.PID)
		}
	}
	// Whatever descendants are left (the components' own children) sit in the lab's cgroups.
	// The pids hierarchy first: it holds every process, so the other hierarchies are empty afterwards.
	cgroups := []string{}
	if root := host.CgroupRoot(); root != "" {
		cgroups = append(cgroups, host.LabCgroup(root))
	}
	if st != nil {
		for _, cg := range st.Cgroups {
			if !contains(cgroups, cg) {
				cgroups = append(cgroups, cg)
			}
		}
	}
	for _, cg := range cgroups {
		if err := host.KillCgroup(ctx, cg); err != nil {
			errs = append(errs, err)
		}
	}
	if err := host.UnmountAll(ctx, d.State); err != nil {
		errs = append(errs, fmt.Errorf("unmounting: %w", err))
	}
	errs = append(errs, detachNodeDisk(ctx, d, progress)...)
	for _, dev := range host.LoopDevicesOf(etcdDiskImage(d)) {
		if _, err := host.Run(ctx, host.Short, "losetup", "-d", dev); err != nil {
			errs = append(errs, err)
		} else {
			progress("detached %s", dev)
		}
	}
	for i := 1; i <= MaxRealNodes; i++ {
		if removed, err := host.DelNetns(ctx, RealNodeNetNS(i)); err != nil {
			errs = append(errs, err)
		} else if removed {
			progress("network namespace %s removed", RealNodeNetNS(i))
		}
	}
	for i, ids := range nodeIDs {
		errs = append(errs, removeNodeHostEntries(d, i, ids)...)
	}
	errs = append(errs, removeHostLeftovers(d, st)...)
	if removed, err := teardownNetwork(ctx); err != nil {
		errs = append(errs, fmt.Errorf("network: %w", err))
	} else if removed {
		progress("network namespace %s removed", NetNS)
	}
	if st != nil && st.Config.Etcd.Kind == "dir" {
		if err := os.RemoveAll(etcdDataDir(d, &st.Config)); err != nil {
			errs = append(errs, err)
		}
	}
	_, statErr := os.Stat(d.State)
	if len(errs) == 0 && statErr == nil {
		// Only when nothing is mounted or running any more: never delete below a live mount.
		if err := os.RemoveAll(d.State); err != nil {
			errs = append(errs, err)
		} else {
			progress("state %s removed", d.State)
		}
	}
	if stErr != nil && !errors.Is(stErr, os.ErrNotExist) {
		errs = append(errs, stErr)
	}
	return errors.Join(errs...)
}

// removeHostLeftovers removes the few entries that the kubelet, containerd and the CNI plugins write to
// fixed host paths whatever their configuration says: only entries that point into the lab's state, or that
// carry the lab's network name, and directories only when empty.
func removeHostLeftovers(d Dirs, st *State) []error {
	var errs []error
	if st != nil {
		for _, p := range st.HostPaths {
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if links, err := os.ReadDir("/var/log/containers"); err == nil {
		for _, l := range links {
			p := filepath.Join("/var/log/containers", l.Name())
			if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, d.State+"/") {
				if err := os.Remove(p); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

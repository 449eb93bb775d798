package lab

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// hostPathsOwned are fixed host paths that the kubelet, containerd and the CNI plugins use whatever their
// configuration says. `lab up` records those that did not exist before it, and `lab down` removes exactly
// those; in paths that existed before, it removes only entries it can prove are the lab's.
var hostPathsOwned = []string{"/var/lib/kubelet", "/var/lib/cni", "/var/log/containers", "/var/log/pods", "/run/containerd"}

func missingHostPaths() []string {
	var out []string
	for _, p := range hostPathsOwned {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			out = append(out, p)
		}
	}
	return out
}

// nodeContainerIDs lists the IDs of every container and sandbox a node's containerd ran, from its state.
func nodeContainerIDs(d Dirs, i int) []string {
	n := realNode{i}
	entries, err := os.ReadDir(filepath.Join(n.dir(d), "containerd", "state", "io.containerd.runtime.v2.task", "k8s.io"))
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids
}

// drainNode stops a real node's kubelet and kube-proxy, then has its containerd kill and remove every task
// and container, so that shims exit cleanly (removing their sockets and mounts) before containerd stops.
func drainNode(ctx context.Context, d Dirs, i int, progress Progress) {
	n := realNode{i}
	for _, c := range []string{"kubelet", "kube-proxy"} {
		if r, err := d.procs().Read(n.proc(c)); err == nil && r.Alive() {
			if err := r.Stop(10 * time.Second); err == nil {
				progress("stopped %s (pid %d)", r.Name, r.PID)
			}
		}
	}
	r, err := d.procs().Read(n.proc("containerd"))
	if err != nil || !r.Alive() {
		return
	}
	ctr := func(args ...string) string {
		out, _ := host.Run(ctx, time.Minute, "ctr", append([]string{"--address", n.sock(d), "-n", "k8s.io"}, args...)...)
		return out
	}
	ids := nodeContainerIDs(d, i)
	for _, id := range ids {
		ctr("tasks", "kill", "-s", "SIGKILL", id)
	}
	for _, id := range ids {
		ctr("tasks", "delete", "-f", id)
		ctr("containers", "delete", id)
	}
	if len(ids) > 0 {
		progress("%s: removed %d containers and sandboxes", n.name(), len(ids))
	}
}

// shimSocket is where containerd 1.6 puts a task's shim socket: /run/containerd/s/<sha256(address/ns/id)>.
func shimSocket(address, ns, id string) string {
	sum := sha256.Sum256([]byte(filepath.Join(address, ns, id)))
	return filepath.Join("/run/containerd/s", fmt.Sprintf("%x", sum))
}

// removeNodeHostEntries removes what a node's containers left in shared host paths: shim sockets of
// killed shims and CNI result caches, identified by the node's own container IDs.
func removeNodeHostEntries(d Dirs, i int, ids []string) []error {
	var errs []error
	rm := func(p string) {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	for _, id := range ids {
		rm(shimSocket(realNode{i}.sock(d), "k8s.io", id))
		matches, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", "*-"+id+"-*"))
		for _, m := range matches {
			rm(m)
		}
	}
	return errs
}

package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// stopOrder stops consumers before what they depend on; components added by later lab features are
// stopped first (they are not in this list and come before it).
var stopOrder = []string{Kwok, KubeScheduler, KubeControllerMgr, KubeAPIServer, Etcd}

// Down stops every process the lab started (by recorded PID), kills what is left in its cgroups, unmounts
// what it mounted, deletes its network namespace and removes its state directory. It is safe on a lab that
// is partly up, already down, or was never started. Errors are collected: one failure does not stop the rest
// of the teardown.
func Down(ctx context.Context, d Dirs, progress Progress) error {
	var errs []error
	st, stErr := d.loadState()
	recs, err := readRecords(d)
	if err != nil {
		errs = append(errs, err)
	}
	byName := map[string]*procRecord{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	var order []string
	for _, r := range recs {
		if !contains(stopOrder, r.Name) {
			order = append(order, r.Name)
		}
	}
	for _, n := range stopOrder {
		if byName[n] != nil {
			order = append(order, n)
		}
	}
	for _, n := range order {
		r := byName[n]
		grace := 10 * time.Second
		if n == KubeAPIServer {
			grace = 20 * time.Second // graceful shutdown drains requests; nothing to save in the lab
		}
		wasAlive := r.alive()
		if err := r.stop(grace); err != nil {
			errs = append(errs, err)
			continue
		}
		if wasAlive {
			progress("stopped %s (pid %d)", n, r.PID)
		}
	}
	// Whatever descendants are left (the components' own children) sit in the lab's cgroups.
	cgroups := []string{}
	if st != nil {
		cgroups = append(cgroups, st.Cgroups...)
	}
	if root := cgroupRoot(); root != "" && !contains(cgroups, labCgroup(root)) {
		cgroups = append(cgroups, labCgroup(root))
	}
	for _, cg := range cgroups {
		if err := killCgroup(ctx, cg); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unmountAll(ctx, d.State); err != nil {
		errs = append(errs, fmt.Errorf("unmounting: %w", err))
	}
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

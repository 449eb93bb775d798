package lab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// Faults injected into a running lab mid-run (the fault tests of docs/faults.md). Each acts on one recorded
// process, by its PID and start time, or on one link of the lab's own namespaces.

// KillComponent kills a control-plane component (KubeAPIServer, Etcd...) at once (SIGKILL: no graceful
// shutdown) and returns a function that starts it again with the same command line and waits until it is
// healthy (the apiserver's /readyz; etcd's /health) and back in its control-plane cgroups.
func KillComponent(d Dirs, name string) (restart func(context.Context) error, err error) {
	rec, err := d.procs().Read(name)
	if err != nil {
		return nil, err
	}
	if err := signal(rec, unix.SIGKILL); err != nil {
		return nil, err
	}
	if err := rec.Stop(10 * time.Second); err != nil { // waits for it to be gone
		return nil, err
	}
	return func(ctx context.Context) error {
		healthy := httpOK(EtcdEndpoint() + "/health")
		if name != Etcd {
			c, err := AdminClient(d)
			if err != nil {
				return err
			}
			healthy = readyz(c)
		}
		if err := startInAndWait(ctx, d, name, NetNS, rec.Argv, componentEnv(nil), func(string, ...any) {}, healthy); err != nil {
			return err
		}
		if name == Etcd || name == KubeAPIServer {
			_, err := JoinControlPlaneCgroups(d)
			return err
		}
		return nil
	}, nil
}

// PauseComponent stops a component (SIGSTOP: it holds its sockets and answers nothing, as a process stalled
// on a disk or frozen by its cgroup) and returns the function that resumes it (SIGCONT).
func PauseComponent(d Dirs, name string) (resume func() error, err error) {
	rec, err := d.procs().Read(name)
	if err != nil {
		return nil, err
	}
	if err := signal(rec, unix.SIGSTOP); err != nil {
		return nil, err
	}
	return func() error { return signal(rec, unix.SIGCONT) }, nil
}

// BlockEtcdClientPort stalls etcd by its network instead of its process: two iptables rules in the lab's
// namespace drop every TCP packet to and from etcd's client port (EtcdPort), so the apiserver's connections
// to etcd stay open and carry nothing, as on a partitioned or congested etcd link, while etcd itself runs on.
// It returns the function that removes the rules (the TCP connections resume on their next retransmission).
// Only the managed layout: etcd listens in the lab's namespace there.
func BlockEtcdClientPort(ctx context.Context, d Dirs) (unblock func(context.Context) error, err error) {
	st, err := d.loadState()
	if err != nil {
		return nil, err
	}
	if st.Config.Kubeadm() {
		return nil, errors.New("blocking etcd's port: only the managed layout runs etcd in the lab's namespace")
	}
	rules := [][]string{
		{"INPUT", "-p", "tcp", "--dport", fmt.Sprint(EtcdPort), "-j", "DROP"},
		{"INPUT", "-p", "tcp", "--sport", fmt.Sprint(EtcdPort), "-j", "DROP"},
	}
	ipt := func(ctx context.Context, op string, r []string) error {
		_, err := host.RunIn(ctx, host.Short, nil, NetNS, append([]string{"iptables", "-w", "5", op}, r...)...)
		return err
	}
	unblock = func(ctx context.Context) error {
		var errs []error
		for _, r := range rules {
			// -D until the rule is gone (-C fails): a rule added twice is removed twice.
			for ipt(ctx, "-C", r) == nil {
				if err := ipt(ctx, "-D", r); err != nil {
					errs = append(errs, err)
					break
				}
			}
		}
		return errors.Join(errs...)
	}
	for _, r := range rules {
		if err := ipt(ctx, "-I", r); err != nil {
			return nil, errors.Join(fmt.Errorf("blocking etcd's port: %w", err), unblock(context.WithoutCancel(ctx)))
		}
	}
	return unblock, nil
}

// signal sends sig to the recorded process through a pidfd (never to a reused PID).
func signal(rec *host.Process, sig unix.Signal) error {
	if !rec.Alive() {
		return fmt.Errorf("%s (pid %d) is not running", rec.Name, rec.PID)
	}
	fd, err := unix.PidfdOpen(rec.PID, 0)
	if err != nil {
		return fmt.Errorf("pidfd for %s: %w", rec.Name, err)
	}
	defer unix.Close(fd)
	if !rec.Alive() {
		return fmt.Errorf("%s (pid %d) exited", rec.Name, rec.PID)
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

// SetRealNodeUplink sets real node i's uplink — its port on the lab bridge, the switch port of its cable —
// down or up. Down, the node keeps its address and routes and loses every packet to and from the rest of
// the lab (the kubelet's lease renewals, the apiserver's proxy to it); up again, the bridge forwards at once.
func SetRealNodeUplink(ctx context.Context, i int, up bool) error {
	if i < 1 || i > MaxRealNodes {
		return fmt.Errorf("real node %d: want 1..%d", i, MaxRealNodes)
	}
	state := "down"
	if up {
		state = "up"
	}
	return host.IPIn(ctx, NetNS, "link", "set", realNode{i}.bridgePort(), state)
}

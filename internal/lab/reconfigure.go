package lab

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Reconfigure turns the running lab into the lab of configuration c without a new start, where c differs
// from the lab's only in settings read by one component's command line or files (reconfigurable: the
// controller-manager's and scheduler's client limits, the EndpointSlice batch period, kwok's stages,
// CoreDNS's cache lifetimes with no DNS replicas, etcd's quota within its storage: the settings the suite's
// scenarios change, each run through it on the lab) and the two plans (NewPlan) differ in nothing else. The
// components whose process differs are stopped (by their recorded PID, SIGTERM and a 10 s grace), their
// files written, started again in plan order and waited for healthy, each with its step's wait run again
// (kwok's nodes Ready, ...); etcd rejoins the control plane's cgroups. It returns the components restarted
// (none when c is the lab's configuration) and records c as the lab's. A lab that cannot be reconfigured into
// c (its nodes, storage, layout, network or DNS shape differ) is left as it is, with a *NeedsNewLabError
// saying why.
func Reconfigure(ctx context.Context, d Dirs, c Config, progress Progress) ([]string, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	st, err := d.loadState()
	if err != nil {
		return nil, fmt.Errorf("no lab to reconfigure in %s: %w", d.State, err)
	}
	if reflect.DeepEqual(st.Config, c) {
		return nil, nil
	}
	if fields := fixedDifferences(st.Config, c); len(fields) > 0 {
		return nil, &NeedsNewLabError{Why: "settings a running lab cannot change differ: " + strings.Join(fields, ", ")}
	}
	old, err := NewPlan(d, st.Config, st.Binaries)
	if err != nil {
		return nil, err
	}
	plan, err := NewPlan(d, c, st.Binaries)
	if err != nil {
		return nil, err
	}
	changed, err := changedComponents(old, plan)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	step := func(format string, args ...any) {
		progress("[%5.1fs] %s", time.Since(t0).Seconds(), fmt.Sprintf(format, args...))
	}
	var names []string
	for _, i := range changed {
		names = append(names, plan.Steps[i].Component.Name)
	}
	if len(names) == 0 {
		step("reconfiguring the lab: no component's process differs (only its recorded settings)")
	} else {
		step("reconfiguring the lab: restarting %s", strings.Join(names, ", "))
	}
	u := &upRun{d: d, c: &c, st: st, step: step}
	if u.client, err = AdminClient(d); err != nil {
		return nil, err
	}
	for _, i := range slices.Backward(changed) {
		name := plan.Steps[i].Component.Name
		rec, err := d.procs().Read(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := rec.Stop(10 * time.Second); err != nil {
			return nil, err
		}
		step("%s stopped (pid %d)", name, rec.PID)
		if name == Kwok {
			// kwok holds its nodes' Leases under an identity of its process (hostname_uuid) and manages only
			// the nodes whose Lease it holds: a new kwok would leave them alone (their pods unstarted) until
			// the old holder's Leases expire. The stopped process's Leases go; the new one takes them anew.
			released, err := releaseKwokLeases(ctx, u)
			if err != nil {
				return nil, err
			}
			step("%d kwok node Leases of the stopped kwok released", released)
		}
	}
	restarted := time.Now()
	// Recorded before the components start: a failed start leaves the lab recorded as c, for `lab down`.
	st.Config = c
	if err := d.saveState(st); err != nil {
		return nil, err
	}
	rejoin := false
	for _, i := range changed {
		s := plan.Steps[i]
		comp := s.Component
		if err := s.run(ctx, u); err != nil {
			return nil, err
		}
		if comp.Name == Kwok {
			if err := waitKwokLeases(ctx, u, restarted); err != nil {
				return nil, err
			}
			step("kwok holds its nodes' Leases again")
		}
		// A new etcd is outside the control plane's cgroups (kube-apiserver's step, had it run, rejoins both).
		rejoin = rejoin || comp.Name == Etcd
	}
	if rejoin && !c.Kubeadm() {
		joined, err := JoinControlPlaneCgroups(d)
		if err != nil {
			return nil, err
		}
		step("kube-apiserver and etcd in cgroups %s", strings.Join(joined, ", "))
	}
	step("lab reconfigured")
	return names, nil
}

// NeedsNewLabError is Reconfigure's answer for a configuration the running lab cannot be changed into.
type NeedsNewLabError struct{ Why string }

func (e *NeedsNewLabError) Error() string { return "the lab needs a new start: " + e.Why }

// IsNeedsNewLab reports whether err is a *NeedsNewLabError.
func IsNeedsNewLab(err error) bool {
	var e *NeedsNewLabError
	return errors.As(err, &e)
}

// fixedDifferences lists the settings (Config's JSON names) in which c differs from old and which a running
// lab cannot change: everything but the reconfigurable ones.
func fixedDifferences(old, c Config) []string {
	m := c
	m.Scenario = old.Scenario // a name only
	m.ControllerManager, m.Scheduler, m.EndpointSliceBatch = old.ControllerManager, old.Scheduler, old.EndpointSliceBatch
	m.Kwok = old.Kwok
	// etcd's quota is its flag, unless the etcd tmpfs (4 GiB, or the quota and 1 GiB more) must grow with it.
	if max(old.EtcdQuotaBytes, c.EtcdQuotaBytes)+(1<<30) <= 4<<30 {
		m.EtcdQuotaBytes = old.EtcdQuotaBytes
	}
	// CoreDNS's Corefile is its process's file; DNS replicas read it from a ConfigMap the lab's start writes.
	if c.DNS.Replicas == 0 {
		m.DNS.CacheTTL, m.DNS.DenialTTL = old.DNS.CacheTTL, old.DNS.DenialTTL
	}
	var out []string
	ov, mv := reflect.ValueOf(old), reflect.ValueOf(m)
	for i := range ov.NumField() {
		if !reflect.DeepEqual(ov.Field(i).Interface(), mv.Field(i).Interface()) {
			name, _, _ := strings.Cut(ov.Type().Field(i).Tag.Get("json"), ",")
			out = append(out, name)
		}
	}
	return out
}

// changedComponents returns the indexes of the component steps of p whose process differs from old's (argv,
// environment, files, network namespace), after checking that nothing else does: the same steps in the
// same order, each work step the same (what it does, its files) and each component step followed by the same
// wait.
func changedComponents(old, p *Plan) ([]int, error) {
	if len(old.Steps) != len(p.Steps) {
		return nil, &NeedsNewLabError{Why: fmt.Sprintf("the plans have %d and %d steps", len(old.Steps), len(p.Steps))}
	}
	var changed []int
	for i, s := range p.Steps {
		o := old.Steps[i]
		if o.Name != s.Name || o.What != s.What || !reflect.DeepEqual(o.Files, s.Files) || o.Background != s.Background ||
			o.AfterBackground != s.AfterBackground || (o.Component == nil) != (s.Component == nil) {
			return nil, &NeedsNewLabError{Why: fmt.Sprintf("step %d (%s) differs beyond a component's command line or files", i+1, s.Name)}
		}
		if s.Component == nil {
			continue
		}
		oc, c := o.Component, s.Component
		if oc.Name != c.Name || oc.Health.What != c.Health.What {
			return nil, &NeedsNewLabError{Why: fmt.Sprintf("step %d (%s) starts another component", i+1, s.Name)}
		}
		if oc.Namespace != c.Namespace || !slices.Equal(oc.Argv, c.Argv) || !slices.Equal(oc.Env, c.Env) || !reflect.DeepEqual(oc.Files, c.Files) {
			changed = append(changed, i)
		}
	}
	return changed, nil
}

// kwokLeases lists the Leases of the lab's simulated nodes (in kube-node-lease, named after their nodes).
func kwokLeases(ctx context.Context, u *upRun) ([]coordinationv1.Lease, int, error) {
	nodes, err := u.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: KwokNodeLabel + "=" + KwokNodeLabelValue})
	if err != nil {
		return nil, 0, err
	}
	ours := map[string]bool{}
	for _, n := range nodes.Items {
		ours[n.Name] = true
	}
	l, err := u.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	var out []coordinationv1.Lease
	for _, lease := range l.Items {
		if ours[lease.Name] {
			out = append(out, lease)
		}
	}
	return out, len(ours), nil
}

// releaseKwokLeases deletes the simulated nodes' Leases (their holder, a stopped kwok, renews them no more).
func releaseKwokLeases(ctx context.Context, u *upRun) (int, error) {
	leases, _, err := kwokLeases(ctx, u)
	if err != nil {
		return 0, err
	}
	for _, lease := range leases {
		if err := u.client.CoordinationV1().Leases(lease.Namespace).Delete(ctx, lease.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("releasing the Lease of %s: %w", lease.Name, err)
		}
	}
	return len(leases), nil
}

// waitKwokLeases waits until every simulated node's Lease has been renewed since the new kwok started.
func waitKwokLeases(ctx context.Context, u *upRun, since time.Time) error {
	var held, want int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		leases, n, err := kwokLeases(ctx, u)
		if err != nil {
			return false, nil
		}
		held, want = 0, n
		for _, lease := range leases {
			if r := lease.Spec.RenewTime; r != nil && !r.Time.Before(since.Truncate(time.Second)) {
				held++
			}
		}
		return held == want, nil
	})
	if err != nil {
		return fmt.Errorf("kwok renewed %d of its %d nodes' Leases within a minute of its restart: %w", held, want, err)
	}
	return nil
}

package lab_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The lab's node-monitor grace period in this test: the shortest the lab takes (three of kwok's 10 s renewal
// intervals; Kubernetes' default is 50 s), so that the watch below is as short as its evidence allows.
// leaseWatch is how long a healthy lab is watched, from right after it is up: a grace period, one renewal
// interval and 10 s (the node lifecycle controller's 5 s monitor period, and 5 s), so that a simulated node whose
// Lease kwok stopped renewing at the watch's start (its last renewal up to one interval before) would have gone
// NotReady within it (three runs of 2026-11-29 posted the faulty nodes' NodeNotReady 33-34 s after their last
// renewal: at most 44 s into the watch for a healthy node that stopped, 6 s before its end; such a node would also
// show no renewal where 3 are asked for and 5 seen; without Leases, simulated nodes went NotReady once a minute at
// 50 s). The two faults fit in it too: the Leases are taken once the Deployment runs, and the flapper's is let go
// as soon as it is NotReady (kwok takes it back within a renewal interval: 1 s later in both runs that did).
const (
	leaseGrace = lab.MinNodeMonitorGracePeriod
	leaseWatch = leaseGrace + lab.KwokNodeLeaseDuration/4 + 10*time.Second
)

// TestIntegrationKwokLeases: a healthy lab with 50 simulated nodes passes nodes.health clean; then two of them
// lose their heartbeat the way a stuck kubelet does (another holder keeps their Lease, so kwok stops renewing
// it and stops managing the node): one until it has gone NotReady, one for good. The other 48, watched for 50 s
// from the lab's start (a node-monitor grace period, at 30 s here, a renewal interval and 10 s: long enough for a
// node whose Lease is not renewed to go NotReady), have no NodeNotReady Event and no pod losing Ready, and every
// one of their Leases is renewed by kwok; the two go NotReady, the first comes back, and nodes.health calls it
// flapping and the second down. (The healthy watch, the Deployment's roll-out and the two faults share the 50 s:
// the faults reach only their own nodes and pods.)
func TestIntegrationKwokLeases(t *testing.T) {
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	const n = 50
	if _, err := lab.Up(ctx, d, lab.Config{Nodes: n, Etcd: lab.EtcdStorage{Kind: "tmpfs"}, NodeMonitorGracePeriod: lab.Duration{Duration: leaseGrace}}, t.Logf); err != nil {
		t.Fatalf("lab up: %v", err)
	}
	t.Cleanup(func() { _ = lab.Down(context.Background(), d, t.Logf) })
	c, err := lab.AdminClient(d)
	if err != nil {
		t.Fatal(err)
	}
	// The watch of the healthy nodes starts with the lab: the Deployment's roll-out and the healthy nodes.health
	// are part of it.
	w := watchLab(ctx, t, c)
	start := time.Now()
	runDeployment(ctx, t, c, n)

	res, findings := nodesHealth(ctx, t, c)
	if res.Status != result.StatusPass || len(findings) > 0 {
		t.Errorf("nodes.health on a healthy lab: %s (%s), findings %v", res.Status, res.Reason, findings)
	}
	if m := res.Metric("nodes_ready", nil); m == nil || m.Value != n {
		t.Errorf("nodes_ready = %v, want %d", m, n)
	}
	if t.Failed() {
		return
	}

	// Two nodes lose their heartbeat: another holder takes their Leases (as if their kubelet had stopped
	// renewing and a new one had not come yet).
	flapper, downer := lab.KwokNodeName(1), lab.KwokNodeName(2)
	faulty := map[string]bool{flapper: true, downer: true}
	stolen := time.Now()
	stealLease(ctx, t, c, flapper, 3600)
	stealLease(ctx, t, c, downer, 3600)
	waitFor(ctx, t, 3*time.Minute, "both nodes NotReady (NodeNotReady Events)", func() bool {
		ev, _, _ := w.snapshot()
		return ev[flapper] > 0 && ev[downer] > 0
	})
	notReadyAfter := time.Since(stolen)
	t.Logf("NodeNotReady %s after their Leases stopped being renewed, %s into the watch: a healthy node that stopped at its start would be at most %s into it (the watch is %s)",
		notReadyAfter.Round(time.Second), time.Since(start).Round(time.Second), (notReadyAfter + lab.KwokNodeLeaseDuration/4).Round(time.Second), leaseWatch)
	// The stuck kubelet comes back: the intruder lets the flapper's Lease lapse, and kwok takes it back.
	lapseLease(ctx, t, c, flapper)
	waitFor(ctx, t, 3*time.Minute, flapper+" Ready again (kwok took its expired Lease back)", func() bool {
		node, err := c.CoreV1().Nodes().Get(ctx, flapper, metav1.GetOptions{})
		return err == nil && kube.NodeReady(node)
	})

	// The other 48 nodes over the whole watch.
	if rest := leaseWatch - time.Since(start); rest > 0 {
		t.Logf("watching the other %d simulated nodes and their pods for %s more (%s in all)", n-2, rest.Round(time.Second), leaseWatch)
		select {
		case <-time.After(rest):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	watched := time.Since(start)
	notReady, lostReady, renewals := w.snapshot()
	for node, k := range notReady {
		if !faulty[node] {
			t.Errorf("%d NodeNotReady Events for %s, a healthy node", k, node)
		}
	}
	for _, p := range lostReady {
		if on := p[strings.LastIndex(p, " on ")+4:]; !faulty[on] {
			t.Errorf("pod %s lost Ready on a healthy node", p)
		}
	}
	// kwok renews every 10 s (4% jitter): each Lease is renewed ~5 times in 50 s; fewer than one per 15 s (3)
	// means a renewal interval past 15 s, still inside the grace period but not kubelet's behaviour.
	least, most := -1, 0
	for i := 3; i <= n; i++ {
		r := renewals[lab.KwokNodeName(i)]
		if least < 0 || r < least {
			least = r
		}
		most = max(most, r)
	}
	t.Logf("Lease renewals per healthy node in %s: %d-%d", watched.Round(time.Second), least, most)
	if want := int(watched / (15 * time.Second)); least < want {
		t.Errorf("a healthy node's Lease was renewed only %d times in %s (want at least %d; kwok renews every 10 s)", least, watched.Round(time.Second), want)
	}
	// `lab status` shows each healthy simulated node's Lease (and the flapper's, taken back), held and renewed
	// within its duration; the downer's is the intruder's.
	st, err := lab.GetStatus(ctx, d)
	if err != nil || st.LeasesError != "" {
		t.Fatalf("lab status: %v %s", err, st.LeasesError)
	}
	held := 0
	for _, ns := range st.Nodes {
		kwokHeld := ns.Kind == "kwok" && ns.Lease != nil && !ns.Lease.Expired() && ns.Lease.Holder != "" && ns.Lease.Holder != intruder
		switch {
		case ns.Name == flapper && !kwokHeld:
			t.Errorf("lab status: %s's Lease %+v, want kwok's again, unexpired", flapper, ns.Lease)
		case ns.Name == downer && (ns.Lease == nil || ns.Lease.Holder != intruder):
			t.Errorf("lab status: %s's Lease %+v, want the intruder's", downer, ns.Lease)
		case !faulty[ns.Name] && kwokHeld && ns.Lease.DurationSeconds == lab.KwokNodeLeaseDuration.Seconds():
			held++
		}
	}
	if held != n-2 {
		t.Errorf("lab status shows %d healthy simulated nodes with a held, unexpired %s Lease, want %d", held, lab.KwokNodeLeaseDuration, n-2)
	}
	res, findings = nodesHealth(ctx, t, c)
	recs := map[string]result.Record{}
	for _, r := range res.Records {
		recs[r.ID] = r
	}
	if r := recs[flapper]; r.Labels["issues"] != "Flapping" || r.Values["not_ready_transitions"] < 1 {
		t.Errorf("%s (NotReady and back): record %+v, want Flapping", flapper, r)
	}
	if r := recs[downer]; r.Labels["issues"] != "NotReady" || r.Values["ready"] != 0 {
		t.Errorf("%s (NotReady for good): record %+v, want NotReady and not Flapping", downer, r)
	}
	for _, id := range []string{"KS-NODE-FLAP", "KS-NODE-001"} {
		found := false
		for _, f := range findings {
			if f == id {
				found = true
			}
		}
		if !found {
			t.Errorf("finding %s not raised: %v", id, findings)
		}
	}
	if m := res.Metric("nodes_flapping", nil); m == nil || m.Value != 1 {
		t.Errorf("nodes_flapping = %v, want 1", m)
	}
}

// labWatch records, from informers, the NodeNotReady Events per node, the pods whose Ready condition left
// True, and the renewals of each node Lease.
type labWatch struct {
	mu        sync.Mutex
	notReady  map[string]int
	lostReady []string
	renewals  map[string]int
}

func watchLab(ctx context.Context, t *testing.T, c kubernetes.Interface) *labWatch {
	t.Helper()
	w := &labWatch{notReady: map[string]int{}, renewals: map[string]int{}}
	f := informers.NewSharedInformerFactory(c, 0)
	pods := f.Core().V1().Pods().Informer()
	events := f.Core().V1().Events().Informer()
	lf := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(corev1.NamespaceNodeLease))
	leases := lf.Coordination().V1().Leases().Informer()
	onEvent := func(obj any) {
		if e, ok := obj.(*corev1.Event); ok && e.InvolvedObject.Kind == "Node" && e.Reason == nodes.NotReadyReason {
			w.mu.Lock()
			w.notReady[e.InvolvedObject.Name]++
			w.mu.Unlock()
		}
	}
	_, _ = events.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onEvent, UpdateFunc: func(_, o any) { onEvent(o) }})
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		op, nw := o.(*corev1.Pod), n.(*corev1.Pod)
		if kube.PodReady(op) && !kube.PodReady(nw) {
			w.mu.Lock()
			w.lostReady = append(w.lostReady, nw.Name+" on "+nw.Spec.NodeName)
			w.mu.Unlock()
		}
	}})
	_, _ = leases.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		ol, nl := o.(*coordinationv1.Lease), n.(*coordinationv1.Lease)
		if nl.Spec.RenewTime != nil && (ol.Spec.RenewTime == nil || nl.Spec.RenewTime.After(ol.Spec.RenewTime.Time)) {
			w.mu.Lock()
			w.renewals[nl.Name]++
			w.mu.Unlock()
		}
	}})
	f.Start(ctx.Done())
	lf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, events.HasSynced, leases.HasSynced) {
		t.Fatal("informers did not sync")
	}
	return w
}

func (w *labWatch) snapshot() (notReady map[string]int, lostReady []string, renewals map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	notReady, renewals = map[string]int{}, map[string]int{}
	for k, v := range w.notReady {
		notReady[k] = v
	}
	for k, v := range w.renewals {
		renewals[k] = v
	}
	return notReady, append([]string(nil), w.lostReady...), renewals
}

// intruder is the holder that takes a node's Lease from kwok.
const intruder = "kubeslow-test-intruder"

// stealLease makes another holder renew node's Lease now for seconds: kwok neither renews a Lease held by
// someone else before it expires nor manages the node meanwhile.
func stealLease(ctx context.Context, t *testing.T, c kubernetes.Interface, node string, seconds int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity = ptr.To(intruder)
		l.Spec.LeaseDurationSeconds = ptr.To(seconds)
		l.Spec.RenewTime = ptr.To(metav1.NowMicro())
		_, err = c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("taking %s's Lease: %v", node, err)
	}
}

// lapseLease ends the intruder's hold on node's Lease: its duration cut to 1 s, its renew time kept (the node
// lifecycle controller sees no heartbeat in it), so that it has expired and kwok takes it back at its next try.
func lapseLease(ctx context.Context, t *testing.T, c kubernetes.Interface, node string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != intruder {
			return fmt.Errorf("held by %q, not the intruder", h)
		}
		l.Spec.LeaseDurationSeconds = ptr.To(int32(1))
		_, err = c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("letting %s's Lease lapse: %v", node, err)
	}
}

func waitFor(ctx context.Context, t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	t.Logf("%s after %s", what, time.Since(start).Round(time.Second))
}

// nodesHealth runs the nodes.health measurement against the lab and evaluates every rule over it.
func nodesHealth(ctx context.Context, t *testing.T, c kubernetes.Interface) (result.Result, []string) {
	t.Helper()
	env := &measure.Env{Client: c, Clock: clock.RealClock{}, Log: slog.Default()}
	res := measure.RunOne(ctx, env, nodes.New())
	fs, _ := rule.Evaluate(&result.Report{Results: []result.Result{res}}, check.Rules())
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	sort.Strings(ids)
	t.Logf("nodes.health: %s %s; findings [%s]", res.Status, res.Reason, strings.Join(ids, " "))
	if res.Status == result.StatusError || res.Status == result.StatusSkip {
		t.Fatalf("nodes.health could not measure: %s", res.Reason)
	}
	return res, ids
}

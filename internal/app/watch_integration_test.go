package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/lab/storm"
	"github.com/kubeslow/kubeslow/internal/watch/install"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationWatchInstall: `kubeslow watch install --image IMAGE` (the lab's) runs the watch in the cluster, as a user would
// install it on theirs: the Deployment's pod (the lab's kubeslow image, non-root, read-only root, the
// ServiceAccount bound only to `kubeslow rbac`'s read-only ClusterRole) becomes Ready on a real node, and its
// /metrics, read through the apiserver's Service proxy as Prometheus would scrape it, shows cycles that ended
// ok (the in-cluster config and the read-only role were enough for every measurement it ran: none errored),
// each measurement's status, and kubeslow's own cost per cycle; under a conflict storm it fires KS-API-409
// (kubeslow_finding 1, as a cause); through the apiserver's outage it counts failed cycles, comes back
// (kubeslow_up 1) and never exits. `watch uninstall` then deletes every object install made, the namespace
// with them, and nothing else; the watch exits on its own on the SIGTERM of its pod's deletion.
func TestIntegrationWatchInstall(t *testing.T) {
	d, rc := labtest.Shared(t, appLab(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := kubernetes.NewForConfigOrDie(rc)
	const ns = "kubeslow-watch-it"
	before := clusterScoped(ctx, t, c)

	// A 3 s window (5 s until 2026-11-29; a user's default is 20 s): the observers still take their first and
	// last samples and one between (every 2 s), a conflict storm's ~160 requests a second give some 480
	// 409s in it against KS-API-409's one a second, and every cycle of the test (two before the outage, the
	// one after it, the storm's) is 2 s shorter: on the lab three times, two cycles 17-18 s after install (23 s
	// at 5 s), every measurement's status as before, 2 failed cycles in the outage, KS-API-409 fired 12-14 s
	// into the storm.
	code, out, errOut := runArgs(t, "watch", "install", "--kubeconfig", d.AdminKubeconfig(), "--image", lab.AgentImage, "--namespace", ns,
		"--interval", "10s", "--window", "3s", "--for", "1")
	if code != 0 {
		t.Fatalf("watch install: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("watch install:\n%s", out)
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			runArgs(t, "watch", "uninstall", "--kubeconfig", d.AdminKubeconfig(), "--namespace", ns)
		}
	})

	// The Deployment available: its pod Ready (its readiness probe reads /healthz).
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		dep, err := c.AppsV1().Deployments(ns).Get(ctx, install.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return dep.Status.AvailableReplicas == 1, nil
	})
	if err != nil {
		logPods(t, c, ns)
		t.Fatalf("the watch Deployment did not become available: %v", err)
	}

	scrape := watchScrape(t, c, ns)
	// Until two cycles have ended.
	var fams map[string]*dto.MetricFamily
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if fams, err = scrape(ctx); err != nil {
			t.Logf("scrape: %v", err)
			return false, nil
		}
		return sum(fams["kubeslow_cycles_total"], nil) >= 2, nil
	})
	if err != nil {
		logPods(t, c, ns)
		t.Fatalf("no two cycles scraped: %v", err)
	}
	if ok, all := sum(fams["kubeslow_cycles_total"], map[string]string{"result": "ok"}), sum(fams["kubeslow_cycles_total"], nil); ok != all {
		t.Errorf("kubeslow_cycles_total: %v of %v cycles ok", ok, all)
	}
	statuses := map[string]string{}
	for _, m := range fams["kubeslow_measurement_status"].GetMetric() {
		if m.GetGauge().GetValue() == 1 {
			statuses[label(m, "measurement")] = label(m, "status")
		}
	}
	if len(statuses) < 3 {
		t.Errorf("kubeslow_measurement_status: %v, want the read-only measurements' statuses", statuses)
	}
	for name, st := range statuses {
		if st == string(result.StatusError) {
			t.Errorf("%s errored in the cluster (status %s): its role or in-cluster config fell short", name, st)
		}
	}
	if sum(fams["kubeslow_cycle_api_requests"], nil) <= 0 {
		t.Errorf("kubeslow_cycle_api_requests: %v", fams["kubeslow_cycle_api_requests"])
	}
	if _, ok := fams["kubeslow_up"]; !ok {
		t.Error("no kubeslow_up")
	}
	t.Logf("in-cluster watch: %v cycles, statuses %v", sum(fams["kubeslow_cycles_total"], nil), statuses)
	if n := sum(fams["kubeslow_finding"], map[string]string{"id": "KS-API-409"}); n != 0 {
		t.Fatalf("KS-API-409 firing on the healthy lab: %v", fams["kubeslow_finding"])
	}

	// The apiserver gone for 15 s mid-watch (killed, then started again): the cycles that began in the outage
	// failed and were retried (kubeslow_cycles_total{result="error"}), the watch answered kubeslow_up 1 again
	// after it, and its process never exited (the container did not restart).
	//
	// The cluster's other clients take longer: client-go's reflectors back off through the outage (doubling
	// from 0.8 s, with jitter, up to 30 s), their first watch after the restart ends at once (the new
	// apiserver's watch cache begins after their last resourceVersion), and they list again one back-off
	// later. Until then the controller-manager (garbage collector, namespace controller) and the kubelets see
	// no change, and the uninstall below waits on them, as it would on a real cluster right after an
	// apiserver restart: after a 25 s outage its namespace went 35 s after it (the garbage collector deleted
	// the pod 29.6 s after it, the controller-manager's watches of pods, deployments and namespaces back 56-59
	// s after the restart; audit log, 2026-11-29); after 15 s, 6-11 s.
	errorsBefore := sum(fams["kubeslow_cycles_total"], map[string]string{"result": "error"})
	restart, err := lab.KillComponent(d, lab.KubeAPIServer)
	if err != nil {
		t.Fatal(err)
	}
	// The outage's length, a property of the fault: one and a half cycle periods (10 s), so that at least one
	// cycle starts while the apiserver is gone (25 s until 2026-11-29: the cluster's clients then backed off
	// longer, and the uninstall below waited on them).
	time.Sleep(15 * time.Second)
	if err := restart(ctx); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		f, err := scrape(ctx)
		if err != nil {
			return false, nil
		}
		fams = f
		return sum(fams["kubeslow_up"], nil) == 1 && sum(fams["kubeslow_cycles_total"], map[string]string{"result": "error"}) > errorsBefore, nil
	})
	if err != nil {
		t.Fatalf("after the apiserver's outage: kubeslow_up %v, cycles %v: want failed cycles counted and the watch up again",
			fams["kubeslow_up"].GetMetric(), fams["kubeslow_cycles_total"].GetMetric())
	}
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 || len(pods.Items[0].Status.ContainerStatuses) != 1 || pods.Items[0].Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the watch's pod after the outage (%v): %+v", err, pods)
	}
	t.Logf("the apiserver's outage: %v failed cycles, then kubeslow_up 1", sum(fams["kubeslow_cycles_total"], map[string]string{"result": "error"})-errorsBefore)

	// Before the storm, KS-API-409 clear again after the outage (a restarted apiserver's clients may retry
	// into conflicts for a moment): what fires next is the storm's.
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		f, err := scrape(ctx)
		return err == nil && sum(f["kubeslow_finding"], map[string]string{"id": "KS-API-409"}) == 0, nil
	})
	if err != nil {
		t.Fatalf("KS-API-409 firing a minute after the apiserver's outage, before any storm: %v", err)
	}

	// A conflict storm (8 clients PUTting IPAMBlocks with stale resourceVersions, as conflict-storm does):
	// the installed watch fires KS-API-409 at the end of the first cycle that holds it (--for 1), with its
	// cause label empty (a cause, not a symptom).
	stormCtx, stopStorm := context.WithTimeout(ctx, 2*time.Minute)
	stormDone := make(chan error, 1)
	began := time.Now()
	go func() {
		_, err := storm.Conflicts(stormCtx, rc, storm.ConflictOptions{Clients: 8, Blocks: 2, QPS: 20, UserAgent: scenario.ConflictStormUserAgent,
			Duration: 2 * time.Minute}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		stormDone <- err
	}()
	var fired *dto.Metric
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		fams, err := scrape(ctx)
		if err != nil {
			t.Logf("scrape: %v", err)
			return false, nil
		}
		for _, m := range fams["kubeslow_finding"].GetMetric() {
			if label(m, "id") == "KS-API-409" && m.GetGauge().GetValue() == 1 {
				fired = m
			}
		}
		return fired != nil, nil
	})
	stopStorm()
	if serr := <-stormDone; serr != nil && !errors.Is(serr, context.Canceled) && !errors.Is(serr, context.DeadlineExceeded) {
		t.Errorf("conflict storm: %v", serr)
	}
	if err != nil {
		t.Fatalf("the installed watch did not fire KS-API-409 within 90 s of a conflict storm: %v", err)
	}
	t.Logf("KS-API-409 fired %s after the storm began: %v", time.Since(began).Round(time.Second), fired.GetLabel())
	if label(fired, "cause") != "" || label(fired, "severity") == "" {
		t.Errorf("KS-API-409's labels: %v, want a cause (no cause label) with its severity", fired.GetLabel())
	}

	ended := followPodEnd(ctx, t, c, ns)
	uninstallBegan := time.Now()
	code, out, errOut = runArgs(t, "watch", "uninstall", "--kubeconfig", d.AdminKubeconfig(), "--namespace", ns)
	uninstalled = true
	if code != 0 {
		t.Fatalf("watch uninstall: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("watch uninstall returned after %s", time.Since(uninstallBegan).Round(100*time.Millisecond))
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Errorf("namespace %s still there after uninstall", ns)
	} else {
		// Where the suite's time goes (docs/testing.md): the namespace controller's 5 s delay after the
		// delete, the pod's deletion by the garbage collector (the Deployment is deleted in the background),
		// the kubelet's stop of its container: 5-6 s when none of them is backing off from the outage above,
		// more when they still are (see there).
		t.Logf("namespace %s gone %s after the uninstall began", ns, time.Since(uninstallBegan).Round(100*time.Millisecond))
	}
	// The watch exits on its own on SIGTERM (its context cancelled mid-cycle, its server shut down): exit
	// code 0, where a process that let the grace period run out would have been killed (137), holding up
	// every rollout and uninstall by 30 s.
	if end, ok := <-ended; !ok {
		t.Errorf("the watch's pod was not seen deleted")
	} else {
		switch term := end.term; {
		case term == nil:
			t.Errorf("pod %s deleted with no terminated state of its container", end.name)
		case term.ExitCode != 0:
			t.Errorf("the watch's container ended with exit code %d (%s), want 0: it did not exit on its own on SIGTERM", term.ExitCode, term.Reason)
		default:
			t.Logf("the watch's pod %s: its deletion seen %s after the uninstall began, its container's exit (%d, %s) %s after that, the pod gone %s after the exit",
				end.name, end.deleting.Sub(uninstallBegan).Round(100*time.Millisecond), term.ExitCode, term.Reason,
				end.exited.Sub(end.deleting).Round(100*time.Millisecond), end.gone.Sub(end.exited).Round(100*time.Millisecond))
		}
	}
	if after := clusterScoped(ctx, t, c); after != before {
		t.Errorf("cluster-scoped roles and bindings differ after uninstall:\nbefore %s\nafter  %s", before, after)
	}
}

// watchScrape reads the installed watch's /metrics in ns through its Service, as Prometheus would (through
// the apiserver's proxy here).
func watchScrape(t *testing.T, c kubernetes.Interface, ns string) func(context.Context) (map[string]*dto.MetricFamily, error) {
	return func(ctx context.Context) (map[string]*dto.MetricFamily, error) {
		raw, err := c.CoreV1().Services(ns).ProxyGet("http", install.Name, install.PortName, "/metrics", nil).DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(string(raw)))
		if err != nil {
			t.Fatalf("the watch's /metrics does not parse: %v", err)
		}
		return fams, nil
	}
}

// clusterScoped lists the cluster's ClusterRoles and ClusterRoleBindings by name.
func clusterScoped(ctx context.Context, t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	var names []string
	roles, err := c.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		names = append(names, "role/"+r.Name)
	}
	bindings, err := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings.Items {
		names = append(names, "binding/"+b.Name)
	}
	return strings.Join(names, " ")
}

// sum adds a family's values over the metrics whose labels include want.
func sum(f *dto.MetricFamily, want map[string]string) float64 {
	var s float64
	for _, m := range f.GetMetric() {
		match := true
		for k, v := range want {
			match = match && label(m, k) == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			s += m.GetCounter().GetValue()
		case m.Gauge != nil:
			s += m.GetGauge().GetValue()
		case m.Untyped != nil:
			s += m.GetUntyped().GetValue()
		}
	}
	return s
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// podEnd is how a pod ended: when its deletion and its removal were seen here, and its container's last
// terminated state.
type podEnd struct {
	name string
	// deleting, exited and gone are when the test's watch saw the deletion, its container's terminated
	// state, and the pod gone.
	deleting, exited, gone time.Time
	term                   *corev1.ContainerStateTerminated
}

// followPodEnd follows the one pod of ns from now until it is deleted, and sends how it ended; the channel is
// closed without a value when ctx ends first.
func followPodEnd(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string) <-chan podEnd {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the watch's pod in %s (%v): %d pods", ns, err, len(pods.Items))
	}
	name := pods.Items[0].Name
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, pods.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = "metadata.name=" + name
			return c.CoreV1().Pods(ns).Watch(ctx, o)
		}})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan podEnd, 1)
	go func() {
		defer close(out)
		defer rw.Stop()
		end := podEnd{name: name}
		for ev := range rw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if p.DeletionTimestamp != nil && end.deleting.IsZero() {
				end.deleting = time.Now()
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Terminated != nil {
					end.term = cs.State.Terminated
					if end.exited.IsZero() {
						end.exited = time.Now()
					}
				}
			}
			if ev.Type == watch.Deleted {
				end.gone = time.Now()
				out <- end
				return
			}
		}
	}()
	return out
}

// logPods logs each pod of ns with its phase, conditions and its containers' states.
func logPods(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("pods of %s: %v", ns, err)
		return
	}
	for _, p := range pods.Items {
		logPod(t, c, ns, p.Name)
	}
}

package app

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/measure/availability"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationFaults runs `kubeslow run`, given only the lab's kubeconfig, through faults injected
// mid-measurement, on one lab, one run after the other (docs/faults.md): etcd stopped for 10 s (SIGSTOP) and
// then cut off for 10 s (its client port dropped) in one run, the apiserver frozen for 12 s and then etcd for
// 10 s in one run, one real node's uplink down for 20 s and the other real node's agent pod deleted in one run,
// `kubeslow bench pods` under an APF priority level that rejects it, and last the apiserver killed and started
// again. Each run finishes with an honest exit code, marks what the faults interrupted, names each outage it
// lived through (etcd's stall as KS-ETCD-STALL) and leaves no kubeslow-labelled object behind.
func TestIntegrationFaults(t *testing.T) {
	// The package's shared lab (appLab); the faults below each end with the lab whole again, which the shared
	// lab's check at the end of the test confirms.
	d, rc := labtest.Shared(t, appLab(t))
	t.Setenv("KUBESLOW_STATE_DIR", d.State)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := kubernetes.NewForConfigOrDie(rc)
	kc := d.AdminKubeconfig()
	// A short run: the probe, the API and pod start-up (its pods are what the fault hits), each case's window
	// (cpRun) as long as its evidence needs: the fault, then 3-6 probes of the control plane recovered, which
	// close the outage's window (one would; a window still open at the run's end is counted to its last probe
	// all the same) and show no outage of the other cause after it (a restarted apiserver's post-start hooks
	// fail for 1-2 s after the restart); logMargins logs each. pods.startup, which waits through the fault,
	// ends ~3 s into the restart's run, ~22 s into the two etcd stalls' and ~24 s into the two freezes' (runs
	// of 2026-11-29), and a run lasts as long as it. The budget stops it waiting for pods a fault lost
	// (kwok misses some after etcd is cut off): at 40 s, 16 s past the latest that waits for none (at 90 s the
	// etcd-port-blocked case waited 78 s for one pod kwok never started, CI of 2026-11-29; at 60 s, 60 s).
	cpRun := func(window string) []string {
		return []string{"run", "--kubeconfig", kc, "--only", "controlplane.availability,api.responsiveness,pods.startup,nodes.health",
			"--window", window, "--budget", "40s", "--out-dir", "", "-o", "json"}
	}
	// The node agents watch their node for the window from their own start and report; the run waits for every
	// agent's report (Ready), up to the budget (60 s): the node faults' run ends 24-30 s in (7 runs of
	// 2026-11-29; 29 s with a 15 s window too: the agent behind the 20 s uplink outage is Ready only once its
	// kubelet's status reaches the apiserver again, seconds after the link is up).
	nodeArgs := []string{"run", "--kubeconfig", kc, "--agent-image", lab.AgentImage, "--only", "controlplane.availability,nodes.kubelet,nodes.agent,nodes.health",
		"--window", "20s", "--budget", "60s", "--out-dir", "", "-o", "json"}

	// etcd's stall by two mechanisms in one run (until 2026-11-29 one run each: 20 s windows, then 15 s and
	// 18 s): etcd stopped (SIGSTOP) for 10 s from the run's first pod, then, once the apiserver's /readyz passes
	// again, etcd running on behind its client port dropping every packet for 10 s. Each stall is asserted as in
	// a run of its own: an etcd window that starts inside it and is at least the rule's threshold long (the one
	// KS-ETCD-STALL finding would fire on either alone), the second after the first (two outages told apart);
	// and over the run, as for each before, assertOutage: KS-ETCD-STALL named, KS-APISERVER-UNREACHABLE clear,
	// the results marked, no finding on them left unexplained. The first stall's window ends ~11 s in, the
	// second's up to ~3 s after the port opens (the apiserver's connections to etcd come back on TCP's
	// retransmission clock: 11-13 s windows for the 10 s, 2026-11-29), ~27 s in: a 31 s window leaves ~4 probes.
	t.Run("etcd-stall-then-port-blocked", func(t *testing.T) {
		var stopped, resumed, blocked, unblocked time.Time
		rep, code := runThrough(ctx, t, c, cpRun("31s"), func() {
			waitKubeslowPod(ctx, t, c, "")
			resume, err := lab.PauseComponent(d, lab.Etcd)
			if err != nil {
				t.Fatal(err)
			}
			stopped = time.Now()
			time.Sleep(10 * time.Second) // the stall's length
			if err := resume(); err != nil {
				t.Fatal(err)
			}
			resumed = time.Now()
			// The second stall only once etcd answers the apiserver again, for two of the probe's periods: two
			// outages, not one (/readyz passing once, 0.2 s after SIGCONT, was not enough: no probe saw it
			// pass and the two windows ran together, 1 run in 4).
			waitReadyz(ctx, t, c, "SIGCONT to etcd", 2*availability.ProbeEvery)
			unblock, err := lab.BlockEtcdClientPort(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			blocked = time.Now()
			time.Sleep(10 * time.Second) // the stall's length
			if err := unblock(ctx); err != nil {
				t.Fatal(err)
			}
			unblocked = time.Now()
		})
		t.Logf("etcd stopped %s → %s; its port blocked %s → %s", stopped.Format("15:04:05.0"), resumed.Format("15:04:05.0"),
			blocked.Format("15:04:05.0"), unblocked.Format("15:04:05.0"))
		assertOutage(t, rep, code, availability.CauseEtcd, availability.RuleEtcdStall)
		av := findRes(rep, availability.Name)
		if av == nil {
			t.Fatal("no availability result")
		}
		// Each stall's window: an etcd window that starts while it lasts (the apiserver's etcd check fails
		// ~1-2 s after etcd stops answering it).
		var stall, port *availability.Window
		for _, w := range availability.Outages(*av) {
			during := func(from, to time.Time) bool { return !w.Start.Before(from.Add(-time.Second)) && w.Start.Before(to) }
			switch {
			case w.Cause != availability.CauseEtcd:
			case stall == nil && during(stopped, resumed):
				stall = &w
			case port == nil && during(blocked, unblocked):
				port = &w
			}
		}
		for _, s := range []struct {
			what string
			w    *availability.Window
		}{{"etcd stopped for 10 s", stall}, {"etcd's port blocked for 10 s", port}} {
			switch {
			case s.w == nil:
				t.Errorf("%s: no etcd window starting inside it", s.what)
			case s.w.Seconds() < availability.StallMin:
				t.Errorf("%s: etcd window of %.1f s, under the rule's %g s", s.what, s.w.Seconds(), availability.StallMin)
			default:
				t.Logf("%s:", s.what)
				logMargins(t, av, *s.w)
			}
		}
		if stall != nil && port != nil && !port.Start.After(stall.End) {
			t.Errorf("the port's etcd window %s–%s does not come after the stop's %s–%s: the two outages are not told apart",
				port.Start.Format("15:04:05.0"), port.End.Format("15:04:05.0"), stall.Start.Format("15:04:05.0"), stall.End.Format("15:04:05.0"))
		}
		assertDeleted(ctx, t, c)
	})
	// Two freezes in one run (issue 43): the apiserver's process stopped for 12 s (SIGSTOP: its port still
	// accepts connections, nothing answers), then, once it answers again, etcd's for 10 s. The run finishes,
	// reports each outage apart with its times — the apiserver's 10 s or more as unreachable, etcd's as its stall.
	t.Run("apiserver-then-etcd-frozen", func(t *testing.T) {
		// Both freezes inside the window, with the apiserver's recovery between them, and as long after etcd's
		// as the other runs leave after their outages (~4 s): etcd's window ends ~23 s in (40 s until
		// 2026-11-29, 17 s after it; 32 s until the second run of 2026-11-29, 9 s after it).
		var apiFrozen, apiBack, etcdFrozen time.Time
		rep, code := runThrough(ctx, t, c, cpRun("27s"), func() {
			waitKubeslowPod(ctx, t, c, "")
			resume, err := lab.PauseComponent(d, lab.KubeAPIServer)
			if err != nil {
				t.Fatal(err)
			}
			apiFrozen = time.Now()
			time.Sleep(12 * time.Second) // the freeze's length, a property of the fault
			if err := resume(); err != nil {
				t.Fatal(err)
			}
			// The second freeze only once the apiserver answers again: two outages, not one.
			waitReadyz(ctx, t, c, "SIGCONT to the apiserver", 0)
			apiBack = time.Now()
			resumeEtcd, err := lab.PauseComponent(d, lab.Etcd)
			if err != nil {
				t.Fatal(err)
			}
			etcdFrozen = time.Now()
			time.Sleep(10 * time.Second) // the stall's length
			if err := resumeEtcd(); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("apiserver frozen %s → answering %s; etcd frozen %s (+10 s)", apiFrozen.Format("15:04:05.0"), apiBack.Format("15:04:05.0"), etcdFrozen.Format("15:04:05.0"))
		assertFinished(t, rep, code)
		if code != 1 {
			t.Errorf("exit %d after two outages, want 1", code)
		}
		for _, id := range []string{availability.RuleUnreachable, availability.RuleEtcdStall} {
			named := false
			for _, f := range rep.Findings {
				named = named || (f.ID == id && f.Severity.Rank() >= result.SeverityWarning.Rank())
			}
			if !named {
				t.Errorf("%s not named at warning or above", id)
			}
		}
		av := findRes(rep, availability.Name)
		if av == nil {
			t.Fatal("no availability result")
		}
		var api, etcd *availability.Window
		for _, w := range availability.Outages(*av) {
			t.Logf("outage %s: %s → %s (%.1f s, %d probes, failing %v)", w.Cause, w.Start.Format("15:04:05.0"), w.End.Format("15:04:05.0"), w.Seconds(), w.Probes, w.Failing)
			switch {
			case w.Cause == availability.CauseUnreachable && (api == nil || w.Seconds() > api.Seconds()):
				api = &w
			case w.Cause == availability.CauseEtcd && (etcd == nil || w.Seconds() > etcd.Seconds()):
				etcd = &w
			}
		}
		if api != nil {
			logMargins(t, av, *api)
		}
		if api == nil || api.Seconds() < 10 {
			t.Errorf("the apiserver's 12 s freeze: unreachable window %+v, want >= 10 s", api)
		}
		if etcd == nil {
			t.Fatal("no etcd window for etcd's 10 s freeze")
		}
		logMargins(t, av, *etcd)
		if api != nil && !etcd.Start.After(api.End) {
			t.Errorf("etcd's window %s–%s does not come after the apiserver's %s–%s: the two outages are not told apart",
				etcd.Start.Format("15:04:05.0"), etcd.End.Format("15:04:05.0"), api.Start.Format("15:04:05.0"), api.End.Format("15:04:05.0"))
		}
		assertDeleted(ctx, t, c)
	})
	// Two node faults in one run (until 2026-11-29 one run each, 24 s apiece), on the two real nodes, so that
	// neither's evidence meets the other's: lab-node-1's uplink down for 20 s from the run's first pod (the run
	// waits it out: that node's agent reports once the node is back), and lab-node-2's agent pod deleted once
	// Running (the DaemonSet makes a new one, whose report is read; which node's agent was deleted was chance
	// before). Each fault's assertions stand as in its own run: the run finishes, no finding blames
	// nodes.agent or nodes.kubelet, nodes.agent has a verdict.
	t.Run("node-uplink-down-agent-deleted", func(t *testing.T) {
		rep, code := runThrough(ctx, t, c, nodeArgs, func() {
			waitKubeslowPod(ctx, t, c, "")
			if err := lab.SetRealNodeUplink(ctx, 1, false); err != nil {
				t.Fatal(err)
			}
			down := time.Now()
			defer func() {
				// The outage's length, from the link going down (the deletion below is inside it), and the link
				// up again even when the deletion failed.
				time.Sleep(time.Until(down.Add(20 * time.Second)))
				if err := lab.SetRealNodeUplink(ctx, 1, true); err != nil {
					t.Error(err) // not Fatal: this may run while a Fatal above unwinds
					return
				}
				t.Logf("%s's uplink up again after %s", lab.RealNodeName(1), time.Since(down).Round(100*time.Millisecond))
			}()
			p := waitKubeslowPod(ctx, t, c, lab.RealNodeName(2))
			if err := c.CoreV1().Pods(p.ns).Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s's uplink down; deleted the agent pod %s/%s on %s %s after", lab.RealNodeName(1), p.ns, p.name, lab.RealNodeName(2),
				time.Since(down).Round(100*time.Millisecond))
		})
		assertFinished(t, rep, code)
		// What the agent on lab-node-1 timed while its uplink was down is the fault's own evidence, not blame:
		// its kubelet's connects to the apiserver waiting out retransmitted SYNs (KS-POD-CONNECT-SLOW, CI of
		// 1c67223: 4 connects, p99 2.06 s), its pods' DNS queries timing out. Such a finding must name that node
		// only, in every item; any other finding on nodes.agent or nodes.kubelet still fails the case.
		down := lab.RealNodeName(1)
		kept := rep
		kept.Findings = nil
		for _, f := range rep.Findings {
			if onlyOn(f, down, "KS-POD-CONNECT-SLOW", "KS-POD-DNS-TIMEOUT") {
				t.Logf("the fault's evidence on %s: %s [%s] %s", down, f.ID, f.Severity, f.Summary)
				continue
			}
			kept.Findings = append(kept.Findings, f)
		}
		assertNoBlame(t, kept, "nodes.agent", "nodes.kubelet")
		if r := findRes(rep, "nodes.agent"); r == nil || r.Status == "" {
			t.Errorf("nodes.agent: %+v", r)
		} else {
			// Which node's report was read: both faults' nodes, each after its fault.
			for _, rec := range r.Records {
				t.Logf("  nodes.agent %s %v", rec.ID, rec.Labels["error"])
			}
		}
		assertDeleted(ctx, t, c)
	})
	t.Run("apf-rejects-kubeslow", func(t *testing.T) {
		testAPF(ctx, t, c, kc)
	})
	// The apiserver is killed ~0.3 s into the run and answers again ~10 s in (8 s down, then its start); its
	// post-start hooks fail until ~11 s in: a 15 s window (20 s until 2026-11-29) leaves ~4 s of probes after.
	// A restarted apiserver is slow for a while after that (it rebuilds what it serves, every client lists
	// again): a run started right after it made its first pod 4-7 s late, so that the etcd stall timed by that
	// pod ran past a 15 s window; APF's bench, throttled 20 times instead of 7, took 11 s instead of 3; the
	// node faults' run took 56 s instead of 24-30 (its agent Running 12 s late). So it comes last (first until
	// 2026-11-29, when 20 s windows absorbed that): after it only the check that nothing is left (10-21 s
	// after it, 6 s after APF's run) and the shared lab's.
	t.Run("apiserver-restart", func(t *testing.T) {
		rep, code := runThrough(ctx, t, c, cpRun("15s"), func() {
			waitKubeslowPod(ctx, t, c, "")
			restart, err := lab.KillComponent(d, lab.KubeAPIServer)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(8 * time.Second) // the outage's length, a property of the fault
			if err := restart(ctx); err != nil {
				t.Fatal(err)
			}
		})
		assertOutage(t, rep, code, availability.CauseUnreachable, availability.RuleUnreachable)
		assertDeleted(ctx, t, c)
	})
	// Each case checked that kubeslow deleted what it made (assertDeleted); every run's objects are gone now.
	assertNothingLeft(ctx, t, c)
}

// testAPF puts a dedicated user (kubeslow impersonates it through its kubeconfig) into a priority level of
// one concurrency share that rejects what it cannot run at once, and runs a pod start-up load of 150 pods
// created in bursts of 100: kubeslow is rejected (429), its client rate falls, the report says so.
func testAPF(ctx context.Context, t *testing.T, c kubernetes.Interface, adminKubeconfig string) {
	const user, name = "kubeslow-apf-test", "kubeslow-apf-test"
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	plc := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name},
			MatchingPrecedence: 100, DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}}}}
	defer func() {
		// The test's own objects: deleted whatever happened, and checked gone.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = c.FlowcontrolV1().FlowSchemas().Delete(dctx, name, metav1.DeleteOptions{})
		_ = c.FlowcontrolV1().PriorityLevelConfigurations().Delete(dctx, name, metav1.DeleteOptions{})
		_ = c.RbacV1().ClusterRoleBindings().Delete(dctx, name, metav1.DeleteOptions{})
		if _, err := c.FlowcontrolV1().FlowSchemas().Get(dctx, name, metav1.GetOptions{}); err == nil {
			t.Errorf("FlowSchema %s left behind", name)
		}
		if _, err := c.FlowcontrolV1().PriorityLevelConfigurations().Get(dctx, name, metav1.GetOptions{}); err == nil {
			t.Errorf("PriorityLevelConfiguration %s left behind", name)
		}
	}()
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, plc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver's APF configuration controller picks the new objects up asynchronously: wait for the
	// FlowSchema's Dangling condition to be set False (it is then in effect).
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		f, err := c.FlowcontrolV1().FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range f.Status.Conditions {
			if cond.Type == flowcontrolv1.FlowSchemaConditionDangling && cond.Status == flowcontrolv1.ConditionFalse {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("FlowSchema never in effect: %v", err)
	}
	// kubeslow's kubeconfig: the admin's, impersonating the throttled user.
	cfg, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = user
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runArgs(t, "bench", "pods", "--kubeconfig", kc, "--count", "150", "--create-qps", "200", "--create-burst", "100", "-o", "json")
	t.Logf("exit %d\n%s", code, lastLines(errOut, 15))
	var rep result.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, errOut)
	}
	if code == 2 {
		t.Fatalf("exit 2: nothing measured under APF")
	}
	ov := findRes(rep, result.SelfPrefix+"overhead")
	if ov == nil {
		t.Fatal("no kubeslow.overhead")
	}
	throttled, configured, low := metric(ov, "api_throttled", nil), metric(ov, "client_rate_configured", nil), metric(ov, "client_rate_min", nil)
	t.Logf("kubeslow throttled %v times; client rate %v/s -> %v/s; %s", throttled, configured, low, ov.Reason)
	if throttled < 1 || low >= configured || !strings.Contains(ov.Reason, "throttled by the apiserver (429, APF)") || !strings.Contains(ov.Reason, "request rate fell from") {
		t.Errorf("kubeslow did not say it was throttled and backed off: %v 429s, rate %v -> %v, %s %q", throttled, configured, low, ov.Status, ov.Reason)
	}
	for _, f := range rep.Findings {
		if strings.Contains(f.Summary, "429") && f.Severity.Rank() >= result.SeverityWarning.Rank() {
			t.Logf("finding on 429s (the cluster's APF counters, true of this lab): %s %s", f.ID, f.Summary)
		}
	}
	assertDeleted(ctx, t, c)
}

// runThrough runs kubeslow with args while inject runs the fault, and returns its report and exit code.
func runThrough(ctx context.Context, t *testing.T, c kubernetes.Interface, args []string, inject func()) (result.Report, int) {
	t.Helper()
	var (
		wg          sync.WaitGroup
		code        int
		out, errOut string
	)
	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		code, out, errOut = runArgs(t, args...)
	}()
	inject()
	t.Logf("fault over after %s", time.Since(start).Round(time.Second))
	wg.Wait()
	t.Logf("exit %d after %s; last progress lines:\n%s", code, time.Since(start).Round(time.Second), lastLines(errOut, 25))
	return loggedReport(t, out, errOut), code
}

// assertFinished: the run finished with a report and an exit code that says what it found (0 or 1), not
// "could not run".
func assertFinished(t *testing.T, rep result.Report, code int) {
	t.Helper()
	if code != 0 && code != 1 {
		t.Errorf("exit %d", code)
	}
	if code == 0 {
		for _, f := range rep.Findings {
			if f.Severity.Rank() >= result.SeverityWarning.Rank() {
				t.Errorf("exit 0 with finding %s [%s]", f.ID, f.Severity)
			}
		}
	}
	if r := findRes(rep, availability.Name); r == nil || !r.Status.Measured() {
		t.Errorf("%s: %+v", availability.Name, r)
	}
}

// assertOutage: the run names the outage of cause by its rule, with exit 1, and every other finding at
// warning or above is not one resting on a result that ran through it (those are explained by the outage).
func assertOutage(t *testing.T, rep result.Report, code int, cause, ruleID string) {
	t.Helper()
	assertFinished(t, rep, code)
	if code != 1 {
		t.Errorf("exit %d after an outage, want 1 (the outage is a finding)", code)
	}
	var named bool
	for _, f := range rep.Findings {
		if f.ID == ruleID {
			named = f.Severity.Rank() >= result.SeverityWarning.Rank()
		}
		// The other outage's rule must not fire: a restarted apiserver failing its etcd check while it
		// starts is not an etcd stall, and a stalled etcd behind an answering apiserver is not the
		// apiserver unreachable.
		if (f.ID == availability.RuleEtcdStall || f.ID == availability.RuleUnreachable) && f.ID != ruleID {
			t.Errorf("%s fired on a %s outage: %s", f.ID, cause, f.Summary)
		}
	}
	if !named {
		t.Errorf("the %s outage is not named (%s)", cause, ruleID)
	}
	av := findRes(rep, availability.Name)
	if av == nil {
		return
	}
	var outage *availability.Window
	for _, w := range availability.Outages(*av) {
		if w.Cause == cause {
			outage = &w
		}
	}
	if outage == nil {
		t.Fatalf("no %s window in %s: %q", cause, availability.Name, av.Reason)
	}
	logMargins(t, av, *outage)
	marked := 0
	for _, r := range rep.Results {
		if strings.Contains(r.Reason, "ran through an outage") {
			marked++
		}
	}
	if marked == 0 {
		t.Error("no result says it ran through the outage")
	}
	for _, f := range rep.Findings {
		if f.ID == ruleID || f.Severity.Rank() < result.SeverityWarning.Rank() {
			continue
		}
		for _, name := range f.Results {
			if r := findRes(rep, name); r != nil && strings.Contains(r.Reason, "ran through an outage") {
				t.Errorf("finding %s [%s] rests on %s, which ran through the outage, and is not explained by it: %s", f.ID, f.Severity, name, f.Summary)
			}
		}
	}
}

// logMargins logs the margins of the outage w of the availability result av: its length against the rules'
// threshold (availability.StallMin), and how long the probe ran on after it (the window's tail; the outage
// ends at the first probe that passed).
func logMargins(t *testing.T, av *result.Result, w availability.Window) {
	t.Helper()
	t.Logf("margins: %s window %.1f s, %.1fx the rule's %g s; the probe ran %.1f s past its end",
		w.Cause, w.Seconds(), w.Seconds()/availability.StallMin, availability.StallMin, av.End.Sub(w.End).Seconds())
}

// onlyOn: f is one of the rules ids and each of its items (node-agent rules name the node as "... on NODE: ...")
// is on node.
func onlyOn(f result.Finding, node string, ids ...string) bool {
	if !slices.Contains(ids, f.ID) || len(f.Items) == 0 || f.ItemCount > len(f.Items) {
		return false
	}
	for _, it := range f.Items {
		if !strings.Contains(it.Summary, " on "+node+": ") {
			return false
		}
	}
	return true
}

// assertNoBlame: no finding at warning or above rests on the named results (whose data the fault took).
func assertNoBlame(t *testing.T, rep result.Report, names ...string) {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Severity.Rank() < result.SeverityWarning.Rank() {
			continue
		}
		for _, n := range f.Results {
			for _, want := range names {
				if n == want {
					t.Errorf("finding %s [%s] on %s after the fault: %s", f.ID, f.Severity, n, f.Summary)
				}
			}
		}
	}
}

// waitReadyz waits (up to a minute after what ended a fault) until the apiserver's /readyz has passed (it
// answers, and etcd answers it) at every poll for steady (0: once).
func waitReadyz(ctx context.Context, t *testing.T, c kubernetes.Interface, after string, steady time.Duration) {
	t.Helper()
	var since time.Time // the first of the passing polls in a row
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			since = time.Time{}
			return false, nil
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= steady, nil
	}); err != nil {
		t.Fatalf("the apiserver's /readyz did not pass within a minute of %s: %v", after, err)
	}
}

type podRef struct{ ns, name string }

// waitKubeslowPod waits for a pod of the run (any kubeslow-labelled pod; with agentOn, a Running pod of its
// node agent DaemonSet on that node) and returns it.
func waitKubeslowPod(ctx context.Context, t *testing.T, c kubernetes.Interface, agentOn string) podRef {
	t.Helper()
	var got podRef
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: kube.Selector("").String()})
		if err != nil {
			return false, nil
		}
		going, err := goingNamespaces(ctx, c)
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if going[p.Namespace] || p.DeletionTimestamp != nil {
				continue // an earlier run's, deleted and not gone yet
			}
			if agentOn == "" {
				got = podRef{p.Namespace, p.Name}
				return true, nil
			}
			for _, o := range p.OwnerReferences {
				if o.Kind == "DaemonSet" && p.Status.Phase == "Running" && p.Spec.NodeName == agentOn {
					got = podRef{p.Namespace, p.Name}
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no pod of the run appeared: %v", err)
	}
	return got
}

// goingNamespaces are kubeslow's namespaces being deleted.
func goingNamespaces(ctx context.Context, c kubernetes.Interface) (map[string]bool, error) {
	l, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: kube.Selector("").String()})
	if err != nil {
		return nil, err
	}
	return going(l.Items), nil
}

// going are the namespaces of nss being deleted.
func going(nss []corev1.Namespace) map[string]bool {
	out := map[string]bool{}
	for _, ns := range nss {
		if ns.DeletionTimestamp != nil {
			out[ns.Name] = true
		}
	}
	return out
}

// assertDeleted waits (up to 2 minutes) until kubeslow has deleted every kubeslow-labelled namespace, pod and
// DaemonSet: each is gone, being deleted, or in a namespace being deleted. The namespace controller removes
// them on its own clock (5 s after the delete, then its passes), which the next case need not wait for:
// assertNothingLeft, at the test's end, checks them all gone.
func assertDeleted(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	pollLeft(ctx, t, c, true)
}

// assertNothingLeft waits (up to 2 minutes: a namespace's deletion finishes after its pods are finalised)
// until no kubeslow-labelled namespace, pod or DaemonSet exists.
func assertNothingLeft(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	pollLeft(ctx, t, c, false)
}

// pollLeft polls until no kubeslow-labelled namespace, pod or DaemonSet is left (with deleting: none that
// is not being deleted, itself or with its namespace).
func pollLeft(ctx context.Context, t *testing.T, c kubernetes.Interface, deleting bool) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: kube.Selector("").String()}
	var left []string
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		left = nil
		nss, err := c.CoreV1().Namespaces().List(ctx, sel)
		if err != nil {
			left = append(left, "namespaces: "+err.Error())
			return false, nil
		}
		gone := map[string]bool{} // deleting: the namespaces being deleted count as gone, and so does their content
		if deleting {
			gone = going(nss.Items)
		}
		kept := func(ns string, m metav1.Object) bool { return !gone[ns] && m.GetDeletionTimestamp() == nil }
		for _, o := range nss.Items {
			if kept(o.Name, &o) {
				left = append(left, "namespace/"+o.Name)
			}
		}
		if l, err := c.CoreV1().Pods("").List(ctx, sel); err == nil {
			for _, o := range l.Items {
				if kept(o.Namespace, &o) {
					left = append(left, "pod/"+o.Namespace+"/"+o.Name)
				}
			}
		}
		if l, err := c.AppsV1().DaemonSets("").List(ctx, sel); err == nil {
			for _, o := range l.Items {
				if kept(o.Namespace, &o) {
					left = append(left, "daemonset/"+o.Namespace+"/"+o.Name)
				}
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("kubeslow objects %s after 2 minutes: %v", map[bool]string{true: "not deleted", false: "left"}[deleting], left)
		return
	}
	t.Logf("%s (checked %s after the run)", map[bool]string{true: "every kubeslow object deleted", false: "no kubeslow object left"}[deleting],
		time.Since(start).Round(time.Second))
}

func findRes(r result.Report, name string) *result.Result { return find(r, name) }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// loggedReport decodes a run's JSON report (its stdout; stderr for the message if it is none) and logs its results
// and findings.
func loggedReport(t *testing.T, out, errOut string) result.Report {
	t.Helper()
	var rep result.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\nstdout %s\nstderr %s", err, out, errOut)
	}
	for _, r := range rep.Results {
		t.Logf("  %-28s %-5s %s", r.Name, r.Status, r.Reason)
	}
	for _, f := range rep.Findings {
		t.Logf("  finding %s [%s] %s", f.ID, f.Severity, f.Summary)
	}
	return rep
}

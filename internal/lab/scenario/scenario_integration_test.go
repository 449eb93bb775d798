package scenario_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	rbaccmd "github.com/kubeslow/kubeslow/internal/cli/rbac"
	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/load/workload"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/source/auditlog"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationControlPlaneScenarios reproduces each control-plane fault on a real lab and checks that
// kubeslow's run names it — and that a healthy lab gets no finding at all.
func TestIntegrationControlPlaneScenarios(t *testing.T) {
	// slow-etcd-disk and etcd-quota share one lab, etcd on a block device with etcd-quota's small quota: the
	// quota is not near (a new lab's few MiB of 48), nor the block device in the way of the fill, and it spares
	// etcd-quota a lab (a reconfigured etcd, 10 s: its old process takes 7 s to stop), which no other test
	// can use after it (it has no Stop).
	etcdLab := func(c *lab.Config) {
		for _, name := range []string{"slow-etcd-disk", "etcd-quota"} {
			sc, err := scenario.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			sc.Configure(c)
		}
	}
	for _, c := range []struct {
		name string
		// window is the observers' window: as long as the evidence needs (users' default is 20 s).
		window time.Duration
		// storm is the lab process of the scenario's storm, which the run waits for (its log says it runs):
		// the window then holds the storm from its first second.
		storm string
		// configure, if set, replaces the scenario's Configure (a lab shared with another scenario).
		configure func(*lab.Config)
	}{
		// No finding may come of the window a healthy lab has always been given here (users' default is 20 s).
		{"healthy", 15 * time.Second, "", nil},
		// The storm's 409s are counted, not sampled, from its first second: KS-API-409 2,846/min and
		// KS-AUDIT-409 2,898/min over 15 s from the storm's start, 3,403-3,651/min and 3,384-3,643/min over
		// 5 s once it ran (2026-11-30), 56-61x the rules' 60/min.
		{"conflict-storm", 5 * time.Second, "storm-conflict", nil},
		// 20 LISTs a second of the 3,000 Events, a rate: over 15 s from the storm's start 2.28 MB/s of LIST
		// bytes, over 8 s once it ran 2.24-2.33 MB/s (2026-11-30), 2.1-2.2x KS-API-LIST-BYTES' 1 MiB/s (their
		// share 100%, the rule's 50%), and 1,152 and 1,113-1,167 LISTs/min, 19x KS-AUDIT-LIST's 60/min
		// (share 99%).
		{"list-storm", 8 * time.Second, "storm-list", nil},
		// API Priority and Fairness, two mechanisms: a ServiceAccount's LIST storm in a priority level of 1 share
		// (~3 seats) that rejects what does not fit (apf-reject), or queues 2 and rejects the overflow
		// (apf-queue-full). The lab's admin, system:masters, is exempt: only another identity is limited. The
		// rule wants one rejection; over 8 s windows 740/min and 224/min (2026-11-30): 4 s hold ~50 and ~15.
		{"apf-reject", 4 * time.Second, scenario.APFStormProcess, nil},
		{"apf-queue-full", 4 * time.Second, scenario.APFStormProcess, nil},
		// WAL fsync p99 0.127-0.245 s, 13-24x KS-ETCD-FSYNC's 10 ms: every fsync waits for the throttle; but a
		// quiet lab's etcd syncs its WAL about once a second (12-20 in these 15 s, a healthy lab's 11-20 in
		// 15 s and 9 in 8 s: 2026-11-30), and a p99 needs etcdhealth.MinSamples (5): a shorter window would
		// leave it 6-13.
		{"slow-etcd-disk", 15 * time.Second, "", etcdLab},
		// The NOSPACE alarm is etcd's state, read at the window's end; the window only has to pass.
		{"etcd-quota", 5 * time.Second, "", etcdLab},
	} {
		name := c.name
		t.Run(name, func(t *testing.T) {
			sc, err := scenario.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			if c.configure != nil {
				sc.Configure = c.configure
			}
			if start := sc.Start; c.storm != "" {
				sc.Start = func(ctx context.Context, d lab.Dirs, cfg *lab.Config, progress lab.Progress) error {
					// The log is appended to: a storm of that name that ran before on this lab logged there.
					var from int64
					if st, err := os.Stat(stormLog(d, c.storm)); err == nil {
						from = st.Size()
					}
					if err := start(ctx, d, cfg, progress); err != nil {
						return err
					}
					return waitStormRunning(ctx, d, c.storm, from, progress)
				}
			}
			var extra []func(*rest.Config, lab.Dirs)
			if name == "healthy" {
				extra = append(extra, func(rc *rest.Config, d lab.Dirs) { readOnlyUser(t, rc, d) })
			}
			// The node agent and kubelet checks need real nodes and the agent image; controlplane.usage watches
			// the control plane's CPU (none of these scenarios starves it).
			// The lab's real nodes share this machine's kernel: the agent's I/O pressure is the machine's, which
			// the test reads too (an I/O pressure finding passes on the healthy lab only when this bears it out).
			stall := labtest.SampleIOStall(t.Context(), t, 100*time.Millisecond)
			from := time.Now()
			rep := runScenario(t, sc, c.window, extra, nodes.Name, "api.", "etcd.", "controlplane.")
			to := time.Now()
			logEvidence(t, rep)
			got := map[string]bool{}
			for _, f := range rep.Findings {
				got[f.ID] = true
				t.Logf("finding %s: %s", f.ID, f.Summary)
				// One cause seen by two sources is one finding: the other source's view sits under it.
				for _, s := range f.SeenAlso {
					got[s.ID] = true
					t.Logf("  seen also by %s: %s", s.ID, s.Summary)
				}
			}
			if got["KS-AUDIT-409"] && got["KS-API-409"] {
				for _, f := range rep.Findings {
					if f.ID == "KS-AUDIT-409" {
						t.Errorf("the 409 storm is reported twice (KS-API-409 and KS-AUDIT-409 as findings of their own)")
					}
				}
			}
			for _, r := range rep.Results {
				if !r.Status.Measured() {
					t.Errorf("%s was not measured: %s %s", r.Name, r.Status, r.Reason)
				}
			}
			if len(sc.Expect) == 0 {
				for _, f := range rep.Findings {
					if !stall.Explains(t, f, from, to, nodeagent.DefaultOptions("").Window) {
						t.Fatalf("healthy lab: unexpected findings %v", keys(got))
					}
				}
			}
			for _, id := range sc.Expect {
				if !got[id] {
					t.Errorf("scenario %s: finding %s not reported (got %v)", name, id, keys(got))
				}
			}
			if reason, ok := map[string]string{"apf-reject": "concurrency-limit", "apf-queue-full": "queue-full"}[name]; ok {
				checkAPF(t, rep, reason)
			}
			// The conflict storm on the host's full CPUs is not saturation (TestIntegrationControlPlaneSaturation
			// puts the same kind of storm on a starved control plane).
			for _, id := range []string{"KS-CP-SATURATED", "KS-CP-SATURATED-API"} {
				if got[id] {
					t.Errorf("scenario %s: %s on a control plane with the host's CPUs", name, id)
				}
			}
		})
	}
}

// checkAPF: KS-API-THROTTLED names the lab's small priority level, the FlowSchema that put the noisy
// ServiceAccount there, and the limit it met (reason; a queue's level may reject for time-outs too, beside).
func checkAPF(t *testing.T, rep *result.Report, reason string) {
	t.Helper()
	var seen []string
	for _, f := range rep.Findings {
		if f.ID != "KS-API-THROTTLED" {
			continue
		}
		seen = append(seen, f.Summary)
		for _, ev := range f.Evidence {
			if ev.Labels["priority_level"] == lab.SmallPriorityLevel && ev.Labels["flow_schema"] == lab.NoisyFlowSchema && ev.Labels["reason"] == reason {
				t.Logf("KS-API-THROTTLED: %s", f.Summary)
				return
			}
		}
	}
	t.Errorf("KS-API-THROTTLED %q: want one in priority level %s, FlowSchema %s, reason %s", seen, lab.SmallPriorityLevel, lab.NoisyFlowSchema, reason)
}

// runScenario starts the scenario on a lab of the package's (upScenario), runs the selected measurements with
// the observers' window given and the rules, and stops the scenario.
func runScenario(t *testing.T, sc scenario.Scenario, window time.Duration, extra []func(*rest.Config, lab.Dirs), only ...string) *result.Report {
	t.Helper()
	return runScenarioOn(t, sc, func(d lab.Dirs) []measure.Measurement {
		// etcd's metrics and the audit log as a user who can reach them states them (--etcd-endpoint,
		// --audit-log): the lab hands the measurements nothing of its own.
		ms, err := catalogue.Registry(catalogue.Options{Window: window, EtcdEndpoint: lab.EtcdEndpoint(), AuditLogs: []string{d.AuditLog()}}).Select(only, nil)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}, extra...)
}

// stormLog is the log of the lab process proc.
func stormLog(d lab.Dirs, proc string) string { return filepath.Join(d.LogDir(), proc+".log") }

// waitStormRunning waits until the lab process proc (a storm) logs past offset from that it runs: its clients
// are then racing or listing, past the process's start and its set-up.
func waitStormRunning(ctx context.Context, d lab.Dirs, proc string, from int64, progress lab.Progress) error {
	began := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(stormLog(d, proc))
		return err == nil && int64(len(b)) > from && strings.Contains(string(b[from:]), "storm running"), nil
	})
	if err != nil {
		return fmt.Errorf("%s did not log that it runs: %w", proc, err)
	}
	progress("%s running after %s", proc, time.Since(began).Round(100*time.Millisecond))
	return nil
}

// logEvidence logs the figures the control-plane scenarios' findings rest on, with the samples they come from
// (the margins of the windows above).
func logEvidence(t *testing.T, rep *result.Report) {
	for _, r := range rep.Results {
		for _, m := range r.Metrics {
			switch m.Name {
			case apislo.MetricConflictsPerMinute, apislo.MetricListBytesPerSecond, apislo.MetricListBytesShare,
				auditlog.MetricListsPerMinute, auditlog.MetricListShare,
				etcdhealth.MetricWALFsyncP99, "wal_fsync_samples", etcdhealth.MetricAlarmNoSpace:
				t.Logf("%s %s %v = %s", r.Name, m.Name, m.Labels, result.FormatQuantity(m.Value, m.Unit))
			}
		}
	}
}

// runScenarioWith runs ms on the scenario's lab, given only its kubeconfig (as `kubeslow run --kubeconfig`),
// then each extra while the lab is still up.
func runScenarioWith(t *testing.T, sc scenario.Scenario, ms []measure.Measurement, extra ...func(*rest.Config, lab.Dirs)) *result.Report {
	t.Helper()
	return runScenarioOn(t, sc, func(lab.Dirs) []measure.Measurement { return ms }, extra...)
}

// scenarioBase is the lab the scenario tests start their scenarios on (each scenario's Configure on top): four
// kwok nodes, as slow-node needs (one slow node among three fast), so that the scenarios that are a setting of
// a component share one lab (labtest.Shared reconfigures it).
func scenarioBase(t *testing.T) lab.Config {
	return lab.Config{Nodes: 4, AgentBinary: labtest.Binary(t)}
}

// upScenario starts sc on a lab of configuration cfg with the scenario's Configure applied: the package's
// shared lab where the previous test left one of the same configuration (labtest.Shared: scenarios that only
// add load, with a Stop, share one), a fresh one otherwise. The scenario's Stop runs when the test ends; a
// scenario without one leaves the lab to no other test (labtest.Spend).
func upScenario(t *testing.T, cfg lab.Config, sc scenario.Scenario) (lab.Dirs, *rest.Config) {
	t.Helper()
	if !sc.Supports(cfg.LayoutName()) {
		t.Fatalf("scenario %s does not run on layout %s", sc.Name, cfg.LayoutName())
	}
	sc.Configure(&cfg)
	d, rc := labtest.Shared(t, cfg)
	if sc.Start == nil {
		return d, rc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if sc.Stop != nil {
		t.Cleanup(func() {
			if err := sc.Stop(context.Background(), d, &cfg, t.Logf); err != nil {
				t.Errorf("stopping scenario %s: %v", sc.Name, err)
				labtest.Spend(t, "its scenario did not stop")
			}
		})
	} else {
		labtest.Spend(t, "scenario "+sc.Name+" has no Stop")
	}
	if err := sc.Start(ctx, d, &cfg, t.Logf); err != nil {
		labtest.Spend(t, "its scenario failed to start")
		t.Fatalf("scenario %s: %v", sc.Name, err)
	}
	t.Logf("scenario %s running: %s", sc.Name, sc.Description)
	return d, rc
}

func runScenarioOn(t *testing.T, sc scenario.Scenario, measurements func(lab.Dirs) []measure.Measurement, extra ...func(*rest.Config, lab.Dirs)) *result.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	d, rc := upScenario(t, scenarioBase(t), sc)
	// The run lifecycle of `kubeslow run`: only benchmarks get a namespace (etcd-quota's full etcd refuses to
	// create one), and what they created is deleted before the test ends.
	rep, err := runner.Execute(ctx, runner.Plan{Target: runner.Target{Config: rc, Name: "lab", Lab: true},
		Measurements: measurements(d), Rules: check.Rules(), Progress: t.Logf, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		NodeTier: cpnode.NewShared(cpnode.DefaultOptions(lab.AgentImage))}) // as `kubeslow run` gives it
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range extra {
		f(rc, d)
	}
	return rep
}

// readOnlyUser: a ServiceAccount bound to the built-in view ClusterRole and to the read-only role `kubeslow
// rbac` prints (applied as printed), with a real token, runs every read-only check: the preflight skips
// none, none is skipped for want of a permission, and nothing is created.
func readOnlyUser(t *testing.T, rc *rest.Config, d lab.Dirs) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(rc)
	ro, bench := rbaccmd.Needs()
	var b strings.Builder
	if err := rbaccmd.Write(&b, ro, bench); err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal([]byte(strings.Split(b.String(), "---\n")[0]), &role); err != nil {
		t.Fatal(err)
	}
	if role.Name != rbaccmd.ReadOnlyRole {
		t.Fatalf("the first role printed is %q, want %q", role.Name, rbaccmd.ReadOnlyRole)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kubeslow-viewer", Namespace: "default"}}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"view", rbaccmd.ReadOnlyRole} {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubeslow-viewer-" + r},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: r},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := &rest.Config{Host: rc.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: rc.CAData, CAFile: rc.CAFile}}
	nsBefore, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	rep, err := runner.Execute(ctx, runner.Plan{Target: runner.Target{Config: user, Name: "lab-viewer", Lab: true},
		Measurements: measure.ReadOnlyOf(catalogue.Registry(catalogue.Options{Window: 5 * time.Second, EtcdEndpoint: lab.EtcdEndpoint(), AuditLogs: []string{d.AuditLog()}}).All()), Rules: check.Rules(),
		Progress: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)); t.Logf(f, a...) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if strings.Contains(l, "will be skipped") {
			t.Errorf("preflight: %s", l)
		}
	}
	// This lab has only simulated nodes: the kubelet check is skipped for that (not for a permission), and
	// nothing else may be skipped or fail.
	ran := 0
	for _, r := range rep.Results {
		switch {
		case r.Status.Measured():
			ran++
		case r.Status == result.StatusSkip && strings.Contains(r.Reason, "no real node"):
		default:
			t.Errorf("view + %s user: %s %s: %s", rbaccmd.ReadOnlyRole, r.Name, r.Status, r.Reason)
		}
	}
	if ran == 0 {
		t.Errorf("view + %s user: nothing measured", rbaccmd.ReadOnlyRole)
	}
	// Nothing created: no namespace that was not there before (one still being deleted may go away).
	nsAfter, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, n := range nsBefore.Items {
		before[n.Name] = true
	}
	for _, n := range nsAfter.Items {
		if !before[n.Name] {
			t.Errorf("the read-only run created namespace %s", n.Name)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestIntegrationPodScenarios runs the pod start-up benchmark on the case-E scenarios and checks that the
// finding names the right phase, node or creator.
func TestIntegrationPodScenarios(t *testing.T) {
	// The admission webhook scenarios, two mechanisms of KS-API-WEBHOOK: 50 pods created at 20/s (kubeslow's 8
	// workers) wait for the webhook on every create, 0.8 s (slow-webhook) or its 2 s timeout (webhook-timeout):
	// at most 10/s and 4/s. The webhook is named with its kind and calls, the slow creates (KS-POD-CREATE) are
	// put under it, and KS-API-LATENCY stays clear: the SLI latency leaves the webhook's time out.
	webhookCheck := func(w lab.WebhookSpec) func(t *testing.T, fs map[string]result.Finding) {
		return func(t *testing.T, fs map[string]result.Finding) {
			f, ok := fs["KS-API-WEBHOOK"]
			if !ok {
				t.Fatalf("KS-API-WEBHOOK not reported: %v", fs)
			}
			ev := f.Evidence[0]
			kind := map[bool]string{true: "admit", false: "validating"}[w.Mutating]
			calls := 0
			if m := regexp.MustCompile(`over (\d+) calls`).FindStringSubmatch(f.Summary); m != nil {
				calls, _ = strconv.Atoi(m[1])
			}
			// The 50 creates' calls, most of them in the window: its last scrape may be one taken up to half an
			// observation step before the benchmark ended (measure.SharedScrapes), after which the last creates'
			// calls can end (48 of 50 on webhook-timeout, 2026-11-30; the finding says the window's own count).
			if ev.Labels["name"] != w.Name || ev.Labels["type"] != kind || calls < 40 {
				t.Errorf("KS-API-WEBHOOK: %s %+v: want %s (%s) over most of the 50 creates' calls", f.Summary, ev.Labels, w.Name, kind)
			}
			if failed := strings.Contains(f.Summary, "failed"); failed != w.Hang {
				t.Errorf("KS-API-WEBHOOK: %q: fail-open said %v, want %v", f.Summary, failed, w.Hang)
			}
			if cr, ok := fs["KS-POD-CREATE"]; !ok || cr.ExplainedBy != "KS-API-WEBHOOK" {
				t.Errorf("KS-POD-CREATE %+v: want it, explained by KS-API-WEBHOOK", cr)
			}
			if l, ok := fs["KS-API-LATENCY"]; ok {
				t.Errorf("KS-API-LATENCY fired (%s): the SLI latency should leave the webhook out", l.Summary)
			}
		}
	}
	webhookOpts := podstartup.Options{Kind: workload.Pods, Count: 50, QPS: 20}
	// withAPI: api.responsiveness runs beside the benchmark (its window covers the creates).
	withAPI := map[string]bool{"slow-webhook": true, "webhook-timeout": true}
	cases := []struct {
		scenario string
		opts     podstartup.Options
		check    func(t *testing.T, fs map[string]result.Finding)
	}{
		{"slow-node", podstartup.Options{Kind: workload.Pods, Count: 80, QPS: 40, Burst: 20},
			func(t *testing.T, fs map[string]result.Finding) {
				f, ok := fs["KS-POD-NODE"]
				if !ok || f.Evidence[0].Labels["node"] != scenario.SlowNode {
					t.Fatalf("slow node not named: %+v", fs)
				}
				// kwok's pod-ready stage makes sandbox, network and containers ready at once, so the delay shows
				// as sandbox or start depending on the conditions kwok reports.
				if ph := f.Evidence[0].Labels["phase"]; ph != "sandbox" && ph != "start" {
					t.Fatalf("phase %q, want sandbox or start", ph)
				}
			}},
		// The scheduler binds 5 pods a second: the last of 50 created at once waits ~10 s. 100 pods (19 s)
		// gave start-up p90 16.2 s and the schedule phase 100% of the tail, 50 pods (10 s) p90 7.9 s and 100%
		// (2026-11-30), where KS-POD-PHASE wants over 50% and a p90 over 1 s.
		{"slow-scheduler", podstartup.Options{Kind: workload.Pods, Count: 50, QPS: 50, Burst: 50},
			func(t *testing.T, fs map[string]result.Finding) {
				f, ok := fs["KS-POD-PHASE"]
				if !ok || f.Evidence[0].Labels["phase"] != "schedule" {
					t.Fatalf("schedule phase not named: %+v", fs)
				}
			}},
		{"cm-throttled", podstartup.Options{Kind: workload.Deployment, Count: 300},
			func(t *testing.T, fs map[string]result.Finding) {
				f, ok := fs["KS-POD-RATE"]
				if !ok || f.Evidence[0].Value > 25 || f.Evidence[0].Value < 10 {
					t.Fatalf("controller rate not named: %+v", fs)
				}
			}},
		{"slow-webhook", webhookOpts, webhookCheck(scenario.SlowWebhook)},
		{"webhook-timeout", webhookOpts, webhookCheck(scenario.HungWebhook)},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			sc, err := scenario.Get(c.scenario)
			if err != nil {
				t.Fatal(err)
			}
			c.opts.SLO, c.opts.Timeout, c.opts.Simulated = podstartup.DefaultSLO, 4*time.Minute, true
			ms := []measure.Measurement{podstartup.New(c.opts)}
			if withAPI[c.scenario] {
				ms = append(ms, apislo.New(5*time.Second))
			}
			rep := runScenarioWith(t, sc, ms)
			fs := map[string]result.Finding{}
			for _, f := range rep.Findings {
				fs[f.ID] = f
				t.Logf("finding %s: %s", f.ID, f.Summary)
			}
			if r := rep.Result(podstartup.Name); r == nil || !r.Status.Measured() {
				t.Fatalf("not measured: %+v", r)
			}
			c.check(t, fs)
		})
	}
}

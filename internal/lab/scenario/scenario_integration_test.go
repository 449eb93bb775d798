package scenario_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationControlPlaneScenarios reproduces each control-plane fault on a real lab and checks that
// kubeslow's run names it — and that a healthy lab gets no finding at all.
func TestIntegrationControlPlaneScenarios(t *testing.T) {
	for _, name := range []string{"healthy", "conflict-storm", "list-storm", "etcd-quota", "slow-etcd-disk"} {
		t.Run(name, func(t *testing.T) {
			sc, err := scenario.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			var extra []func(*rest.Config, lab.Dirs)
			if name == "healthy" {
				extra = append(extra, func(rc *rest.Config, d lab.Dirs) { readOnlyUser(t, rc, d) })
			}
			// The node agent and kubelet checks need real nodes and the agent image; controlplane.usage watches
			// the control plane's CPU (none of these scenarios starves it).
			rep := runScenario(t, sc, extra, nodes.Name, "api.", "etcd.", "controlplane.")
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
			if len(sc.Expect) == 0 && len(rep.Findings) > 0 {
				t.Fatalf("healthy lab: unexpected findings %v", keys(got))
			}
			for _, id := range sc.Expect {
				if !got[id] {
					t.Errorf("scenario %s: finding %s not reported (got %v)", name, id, keys(got))
				}
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

// runScenario starts the scenario on a lab of the package's (upScenario), runs the selected measurements and
// the rules, and stops the scenario.
func runScenario(t *testing.T, sc scenario.Scenario, extra []func(*rest.Config, lab.Dirs), only ...string) *result.Report {
	t.Helper()
	return runScenarioOn(t, sc, func(d lab.Dirs) []measure.Measurement {
		// etcd's metrics and the audit log as a user who can reach them states them (--etcd-endpoint,
		// --audit-log): the lab hands the measurements nothing of its own.
		ms, err := catalogue.Registry(catalogue.Options{Window: 15 * time.Second, EtcdEndpoint: lab.EtcdEndpoint(), AuditLogs: []string{d.AuditLog()}}).Select(only, nil)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}, extra...)
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
		{"slow-scheduler", podstartup.Options{Kind: workload.Pods, Count: 100, QPS: 50, Burst: 50},
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
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			sc, err := scenario.Get(c.scenario)
			if err != nil {
				t.Fatal(err)
			}
			c.opts.SLO, c.opts.Timeout, c.opts.Simulated = podstartup.DefaultSLO, 4*time.Minute, true
			rep := runScenarioWith(t, sc, []measure.Measurement{podstartup.New(c.opts)})
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

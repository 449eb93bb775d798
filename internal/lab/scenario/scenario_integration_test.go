package scenario_test

import (
	"context"
	"log/slog"
	"os"
	"sort"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/check"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/labtest"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/all"
	"github.com/kubeslow/kubeslow/internal/runner"
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
			rep := runScenario(t, sc, "nodes.", "api.", "etcd.")
			got := map[string]bool{}
			for _, f := range rep.Findings {
				got[f.ID] = true
				t.Logf("finding %s: %s", f.ID, f.Summary)
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
		})
	}
}

// runScenario starts the scenario on a fresh lab, runs the selected measurements and the rules, and tears
// the lab down (checking that nothing is left).
func runScenario(t *testing.T, sc scenario.Scenario, only ...string) *result.Report {
	t.Helper()
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg := lab.Config{Nodes: 3, AgentBinary: labtest.Binary(t)}
	if _, err := scenario.Up(ctx, d, cfg, sc, t.Logf); err != nil {
		_ = lab.Down(context.Background(), d, t.Logf)
		t.Fatalf("scenario %s up: %v", sc.Name, err)
	}
	procs := labtest.Processes(t, d)
	defer func() {
		if err := lab.Down(context.Background(), d, t.Logf); err != nil {
			t.Errorf("lab down: %v", err)
		}
		labtest.AssertGone(t, d, procs)
	}()
	rc, err := lab.AdminRESTConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(rc)
	ms, err := all.Registry(all.Options{Window: 15 * time.Second}).Select(only, nil)
	if err != nil {
		t.Fatal(err)
	}
	return runner.Run(ctx, runner.Options{Client: c, Config: rc, Clock: clock.RealClock{}, RunID: "test",
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Lab: &measure.LabInfo{EtcdEndpoint: lab.EtcdEndpoint(), AuditLogPath: d.AuditLog()},
		Rules: check.Rules(), Progress: t.Logf}, ms)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

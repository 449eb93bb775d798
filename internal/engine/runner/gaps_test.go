package runner_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// passing is a measurement that measured nothing wrong.
type passing struct{ name string }

func (p passing) Name() string        { return p.name }
func (p passing) Description() string { return p.name }
func (p passing) Run(context.Context, *measure.Env) (result.Result, error) {
	return result.Result{Status: result.StatusPass}, nil
}

// cpUsage is controlplane.usage on a managed control plane: cpusage.Analyze of the apiserver's own scrapes
// with no control-plane node to give the cores, and the node tier's reason added as its observation adds it.
type cpUsage struct{ tier error }

func (cpUsage) Name() string        { return cpusage.Name }
func (cpUsage) Description() string { return cpusage.Name }
func (c cpUsage) Run(context.Context, *measure.Env) (result.Result, error) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// The apiserver's CPU and its goroutines' scheduling delay: what a managed control plane's /metrics gives.
	snap := func(at time.Time, cpu float64, n int) *prom.Snapshot {
		text := fmt.Sprintf("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n", cpu) +
			fmt.Sprintf("# TYPE go_sched_latencies_seconds histogram\ngo_sched_latencies_seconds_bucket{le=\"0.001\"} %d\ngo_sched_latencies_seconds_bucket{le=\"+Inf\"} %d\ngo_sched_latencies_seconds_sum 0\ngo_sched_latencies_seconds_count %d\n", n, n, n)
		s, err := prom.Parse(strings.NewReader(text), at)
		if err != nil {
			panic(err)
		}
		return s
	}
	res := cpusage.Analyze(snap(t0, 10, 0), snap(t0.Add(20*time.Second), 12, 1000), 0, "")
	for i, r := range res.OutOfReach {
		if r.Signal == measure.OutOfReachEtcd.Signal || r.Signal == measure.OutOfReachComponentCPU.Signal {
			res.OutOfReach[i] = cpnode.OutOfReach(r, c.tier)
		}
	}
	return res, nil
}

// managedLab runs, with the real rules, what `kubeslow run` from the kubeconfig meets on the managed-layout lab
// (51 nodes, 50 simulated, none labelled control-plane): etcd.health and api.audit through the real node tier,
// controlplane.usage's analysis, and, without an agent image, the real measurements that need one; the others
// pass.
func managedLab(t *testing.T, image string) (*result.Report, []string) {
	t.Helper()
	var objs []apiruntime.Object
	objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lab-node-0"}})
	for i := range 50 {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kwok-node-%d", i), Labels: map[string]string{"type": "kwok"}}})
	}
	client := fake.NewClientset(objs...)
	ctx := context.Background()
	tierErr := func() error {
		_, err := cpnode.Start(ctx, &measure.Env{Client: client, Log: nil}, cpnode.DefaultOptions(image))
		return err
	}()
	real := map[string]bool{"etcd.health": true, "api.audit": true}
	if image == "" {
		real["nodes.agent"], real["dns.readiness"], real["dns.lookups"] = true, true, true
	}
	built, err := catalogue.Registry(catalogue.Options{Window: time.Second, Image: image, Pods: 50}).Select(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ms []measure.Measurement
	for _, x := range built {
		switch {
		case real[x.Name()]:
			ms = append(ms, x)
		case x.Name() == cpusage.Name:
			ms = append(ms, cpUsage{tier: tierErr})
		default:
			ms = append(ms, passing{x.Name()})
		}
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var progress []string
	rep := runner.Run(ctx, runner.Options{Client: client, Clock: clk, RunID: "r", Namespace: "kubeslow-r", Rules: check.Rules(),
		NodeTier: cpnode.NewShared(cpnode.DefaultOptions(image)),
		Progress: func(f string, a ...any) { progress = append(progress, fmt.Sprintf(f, a...)) }}, ms)
	if err := result.Encode(&bytes.Buffer{}, rep); err != nil {
		t.Fatal(err)
	}
	return rep, progress
}

func gapBySource(gs []result.Gap, src string) *result.Gap {
	for i := range gs {
		if gs[i].Source == src {
			return &gs[i]
		}
	}
	return nil
}

func TestGapsManagedLab(t *testing.T) {
	for _, tc := range []struct {
		name, image, tier string
	}{
		{"with an agent image", "registry.example/kubeslow:dev", measure.SourceNodeTier},
		{"development build without one", "", measure.SourceAgentImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, progress := managedLab(t, tc.image)
			// The per-measurement entries stay as they were.
			if r := rep.Result("etcd.health"); r == nil || r.Status != result.StatusSkip || !strings.Contains(r.Reason, "no --etcd-endpoint") || len(r.OutOfReach) != 1 {
				t.Fatalf("etcd.health: %+v", r)
			}
			gs := rep.Gaps
			if len(gs) == 0 || len(gs) > 8 {
				t.Fatalf("%d gaps, want 1..8: %+v", len(gs), gs)
			}
			seen := map[string]bool{}
			for _, g := range gs {
				if seen[g.Source] {
					t.Errorf("source %s twice", g.Source)
				}
				seen[g.Source] = true
			}
			// Every rule not evaluated is under exactly one gap; every unmeasured result too.
			under := map[string]int{}
			for _, g := range gs {
				for _, id := range g.Rules {
					under[id]++
				}
			}
			notEval := 0
			for _, e := range rep.Rules {
				if e.Status == result.RuleNotEvaluated {
					notEval++
					if under[e.ID] != 1 {
						t.Errorf("rule %s (%s) is under %d gaps", e.ID, e.Reason, under[e.ID])
					}
				}
			}
			if notEval < 8 {
				t.Fatalf("only %d rules not evaluated: not the managed lab's report", notEval)
			}
			etcd := gapBySource(gs, measure.SourceEtcd)
			if etcd == nil || etcd.Measurements[0] != "etcd.health" || etcd.Fix != measure.FixEtcd || len(etcd.Signals) != 1 ||
				!strings.Contains(etcd.Signals[0], "[etcd.health, controlplane.usage]") {
				t.Fatalf("etcd's gap: %+v", etcd)
			}
			for _, id := range []string{"KS-ETCD-FSYNC", "KS-ETCD-QUOTA"} {
				if !contains(etcd.Rules, id) {
					t.Errorf("etcd's gap lacks %s: %v", id, etcd.Rules)
				}
			}
			if a := gapBySource(gs, measure.SourceAudit); a == nil || !contains(a.Measurements, "api.audit") || len(a.Rules) == 0 {
				t.Errorf("the audit log's gap: %+v", a)
			}
			cpu := gapBySource(gs, measure.SourceComponentCPU)
			if cpu == nil || !contains(cpu.Rules, "KS-CP-SATURATED") || len(cpu.Signals) != 3 {
				t.Errorf("the control plane's cores: %+v", cpu)
			}
			// The node tier's reason is said once, under its own source, naming what it held back.
			tier := gapBySource(gs, tc.tier)
			if tier == nil || len(tier.Signals) != 3 {
				t.Fatalf("%s: %+v", tc.tier, tier)
			}
			for _, g := range gs {
				if g.Source != tc.tier && (strings.Contains(g.Reason, "none of the 51 nodes") || strings.Contains(g.Reason, "kubeslow image push")) {
					t.Errorf("gap %s repeats the node tier's reason: %s", g.Source, g.Reason)
				}
			}
			if tc.image == "" {
				if !strings.Contains(tier.Fix, "kubeslow image push") || !strings.Contains(tier.Fix, "docs/agent-image.md") {
					t.Errorf("agent image's fix: %q", tier.Fix)
				}
				for _, n := range []string{"nodes.agent", "dns.readiness", "dns.lookups"} {
					if !contains(tier.Measurements, n) {
						t.Errorf("agent image's gap lacks %s: %v", n, tier.Measurements)
					}
				}
				// Progress says the image's advice once.
				if n := strings.Count(strings.Join(progress, "\n"), "kubeslow image push"); n != 1 {
					t.Errorf("progress says `kubeslow image push` %d times:\n%s", n, strings.Join(progress, "\n"))
				}
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

var update = flag.Bool("update", false, "rewrite internal/report/testdata/managed-lab.json")

// TestManagedLabFixture keeps the report the renderers' tests read (internal/report/testdata/managed-lab.json:
// the development build's run on the managed lab, above) current: go test ./internal/engine/runner -update.
func TestManagedLabFixture(t *testing.T) {
	rep, _ := managedLab(t, "")
	rep.Tool = result.Tool{Name: "kubeslow", Version: "dev"}
	rep.Cluster = result.Cluster{Name: "kubernetes-admin@lab", Server: "https://198.19.255.1:6443", Version: "v1.36.3",
		Nodes: result.NodeCounts{Total: 51, Ready: 51, Simulated: 50}}
	var b bytes.Buffer
	if err := result.Encode(&b, rep); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "report", "testdata", "managed-lab.json")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/engine/runner -update writes it)", err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Fatalf("%s is stale: go test ./internal/engine/runner -update", path)
	}
}

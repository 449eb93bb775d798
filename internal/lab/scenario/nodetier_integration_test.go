package scenario_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/measure/all"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestIntegrationNodeTierKubeadm: on `lab up --layout kubeadm`, `kubeslow run` given only the lab's kubeconfig
// (no --etcd-endpoint, no --audit-log, no lab hints: the agent image is the lab registry's, as --agent-image
// gives it) reads etcd's metrics, the audit log and the components' CPU through the node agent on the
// control-plane node, says so, and on the healthy lab passes with no finding at warning or above. Then, on the
// same lab, kube-apiserver and etcd confined to small-control-plane's 0.1-core cgroup with its conflict storm:
// KS-CP-SATURATED names the component from the node tier.
func TestIntegrationNodeTierKubeadm(t *testing.T) {
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg := lab.Config{Layout: lab.LayoutKubeadm, Nodes: 1, RealNodes: 1, AgentBinary: labtest.Binary(t), Etcd: lab.EtcdStorage{Kind: "tmpfs"},
		ImagePulls: lab.ImagePullSettings{Serialize: true}}
	start := time.Now()
	rc, down := labtest.Up(t, d, func() error { _, err := lab.Up(ctx, d, cfg, t.Logf); return err })
	defer down()
	t.Logf("lab up --layout kubeadm took %s", time.Since(start).Round(100*time.Millisecond))

	// agentWait bounds the wait for the control-plane agent: a control plane held to 0.1 core with a conflict storm
	// creates the DaemonSet's pod slowly (CI once saw none within the default 2 minutes).
	agentWait := cpnode.DefaultOptions(lab.AgentImage).Timeout
	run := func(only ...string) *result.Report {
		t.Helper()
		ms, err := all.Registry(all.Options{Window: 20 * time.Second, Image: lab.AgentImage}).Select(only, nil)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		rep, err := runner.Execute(ctx, runner.Plan{Target: runner.Target{Config: rest.CopyConfig(rc), Name: "lab-kubeconfig"},
			Measurements: ms, Rules: check.Rules(), Progress: t.Logf, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)),
			NodeTier: cpnode.NewShared(func() cpnode.Options { o := cpnode.DefaultOptions(lab.AgentImage); o.Timeout = agentWait; return o }())})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("run of %v took %s", only, time.Since(began).Round(100*time.Millisecond))
		for _, r := range rep.Results {
			t.Logf("result %s: %s %s", r.Name, r.Status, r.Reason)
			for _, o := range r.OutOfReach {
				t.Logf("  out of reach: %s: %s", o.Signal, o.Why)
			}
		}
		for _, f := range rep.Findings {
			t.Logf("finding %s (%s): %s", f.ID, f.Severity, f.Summary)
		}
		return rep
	}

	t.Run("healthy", func(t *testing.T) {
		rep := run(etcdhealth.Name, "api.audit", cpusage.Name)
		for name, says := range map[string]string{etcdhealth.Name: "etcd read by the node agent on " + lab.ControlPlaneNodeName,
			"api.audit": "read by the node agent on " + lab.ControlPlaneNodeName, cpusage.Name: "read by the node agent"} {
			r := rep.Result(name)
			if r == nil || r.Status != result.StatusPass || !strings.Contains(r.Reason, says) {
				t.Errorf("%s: %+v, want Pass saying %q", name, r, says)
				continue
			}
			if len(r.OutOfReach) > 0 {
				t.Errorf("%s: out of reach %+v with the node tier up", name, r.OutOfReach)
			}
		}
		if r := rep.Result(etcdhealth.Name); r != nil {
			m := r.Metric(etcdhealth.MetricWALFsyncP99, map[string]string{"source": cpnode.SourceNodeAgent, "node": lab.ControlPlaneNodeName})
			if m == nil {
				t.Errorf("etcd.health has no WAL fsync p99 labelled source=node-agent, node=%s: %+v", lab.ControlPlaneNodeName, r.Metrics)
			}
		}
		if r := rep.Result("api.audit"); r != nil && r.Metric("audit_source", map[string]string{"source": cpnode.SourceNodeAgent, "node": lab.ControlPlaneNodeName}) == nil {
			t.Errorf("api.audit does not name the node and file: %+v", r.Metrics)
		}
		if r := rep.Result(cpusage.Name); r != nil {
			for _, comp := range []string{cpusage.APIServer, cpusage.Etcd, "kube-scheduler", "kube-controller-manager"} {
				if r.Metric(cpusage.MetricComponentCPUCores, map[string]string{"component": comp, "source": cpnode.SourceNodeAgent}) == nil {
					t.Errorf("controlplane.usage: no %s of %s from the node agent", cpusage.MetricComponentCPUCores, comp)
				}
			}
			if c := r.Metric(cpusage.MetricCoresAvailable, nil); c == nil || !strings.HasPrefix(c.Labels["source"], "node agent") {
				t.Errorf("controlplane.usage: cores available %+v, want the node agent's", c)
			}
		}
		for _, f := range rep.Findings {
			if f.Severity.Rank() >= result.SeverityWarning.Rank() {
				t.Errorf("healthy kubeadm lab: finding %s (%s): %s", f.ID, f.Severity, f.Summary)
			}
		}
	})

	t.Run("small-control-plane", func(t *testing.T) {
		sc, err := scenario.Get("small-control-plane")
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Start(ctx, d, &cfg, t.Logf); err != nil {
			t.Fatal(err)
		}
		// The storm has built up before the window: the apiserver has answered 200 of its 409s.
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := conflicts(ctx, rc)
			return err == nil && n >= 200, nil
		}); err != nil {
			t.Fatalf("the conflict storm did not reach 200 409s: %v", err)
		}
		agentWait = 5 * time.Minute
		rep := run("api.responsiveness", cpusage.Name)
		var f *result.Finding
		for i := range rep.Findings {
			if rep.Findings[i].ID == "KS-CP-SATURATED" {
				f = &rep.Findings[i]
			}
		}
		if f == nil {
			t.Fatal("KS-CP-SATURATED not reported on the kubeadm layout with the node tier")
		}
		// The components are named either one by one (the most saturated, by its run-queue wait) or together
		// under the limit they share ("kube-apiserver and etcd used 0.1 of 0.1 (node agent: CPU limit of
		// kube-apiserver's and etcd's cgroup ... on lab-control-plane)"): either way a component, the tier and
		// the node.
		if !strings.Contains(f.Summary, "node agent") || !strings.Contains(f.Summary, " on "+lab.ControlPlaneNodeName) ||
			!(strings.Contains(f.Summary, "kube-apiserver") || strings.Contains(f.Summary, "etcd")) {
			t.Errorf("KS-CP-SATURATED does not name the component and its tier: %s", f.Summary)
		}
		r := rep.Result(cpusage.Name)
		if r == nil {
			t.Fatal("no controlplane.usage")
		}
		if c := r.Metric(cpusage.MetricCoresAvailable, nil); c == nil || c.Value > scenario.SmallControlPlaneCores*1.01 || !strings.Contains(c.Labels["source"], "CPU limit") {
			t.Errorf("cores available %+v, want the %g-core limit kube-apiserver and etcd share, from the node agent", c, scenario.SmallControlPlaneCores)
		}
		for _, comp := range []string{cpusage.APIServer, cpusage.Etcd} {
			m := r.Metric(cpusage.MetricComponentCoresAvailable, map[string]string{"component": comp})
			if m == nil || m.Value > scenario.SmallControlPlaneCores*1.01 {
				t.Errorf("%s's cores available %+v, want its cgroup's %g-core limit", comp, m, scenario.SmallControlPlaneCores)
			} else {
				t.Logf("%s: %s", comp, fmt.Sprint(m.Labels))
			}
		}
	})
}

// conflicts is the apiserver's count of 409 answers (apiserver_request_total{code="409"}) from its /metrics.
func conflicts(ctx context.Context, rc *rest.Config) (float64, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return 0, err
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	snap, err := prom.Parse(bytes.NewReader(body), time.Now())
	if err != nil {
		return 0, err
	}
	n := 0.0
	for _, s := range snap.Series("apiserver_request_total") {
		if s.Labels["code"] == "409" {
			n += s.Value
		}
	}
	return n, nil
}

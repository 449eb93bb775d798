// Package cpnodetest checks the node tier on a running lab, for the lab's integration tests: on the real
// worker the agent claims no control-plane process, and on a node labelled control-plane (`lab up --layout
// kubeadm`) it finds the four components, scrapes them and streams the audit log.
package cpnodetest

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// Check runs the control-plane agent (image) on a lab's nodes. On the lab's real worker, where no
// control-plane component runs (on the default layout the control plane runs outside every node, in a network
// namespace of its own, in the machine's PID namespace, which the agent shares through hostPID), the agent
// must see those processes and not claim them, and the session must say the control plane is out of reach;
// with no node labelled control-plane, Start must say so before deploying anything. On a node labelled
// control-plane (`lab up --layout kubeadm`), the agent must find the four components, scrape etcd on
// 127.0.0.1:2381 and the scheduler with its token bound to system:monitoring, and stream the audit log.
func Check(t *testing.T, rc *rest.Config, image, worker string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := kubernetes.NewForConfigOrDie(rc)
	runID := "cpnode-test"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubeslow-cpnode-test", Labels: kube.RunLabels(runID)}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = c.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
	}()
	env := &measure.Env{Client: c, Config: rc, Clock: clock.RealClock{}, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Namespace: ns.Name, RunID: runID}
	nodes, err := env.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cpNodes []string
	for _, n := range nodes {
		if _, ok := n.Labels[cpnode.LabelControlPlane]; ok {
			cpNodes = append(cpNodes, n.Name)
		}
	}
	if len(cpNodes) == 0 {
		if _, err := cpnode.Start(ctx, env, cpnode.DefaultOptions(image)); err == nil {
			t.Error("Start on a lab without control-plane nodes succeeded")
		} else if u, ok := cpnode.IsUnreachable(err); !ok || u.Reason != cpnode.NoControlPlaneNodes {
			t.Errorf("Start without control-plane nodes: %v, want %q", err, cpnode.NoControlPlaneNodes)
		}
	} else {
		onControlPlane(ctx, t, env, image)
	}
	onWorker(ctx, t, env, image, worker)
}

func onControlPlane(ctx context.Context, t *testing.T, env *measure.Env, image string) {
	t.Helper()
	o := cpnode.DefaultOptions(image)
	o.MetricsAccess, o.Interval = true, time.Second
	s, err := cpnode.Start(ctx, env, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	comps, err := s.ControlPlane(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]cpnode.Component{}
	for _, c := range comps {
		seen[c.Name] = c
		t.Logf("%s on %s: pid %d, %.3f cores, run-queue wait %.3f s/s, cgroup %+v, manifest %s", c.Name, c.Node, c.PID, c.CPU.Rate, c.CPU.SchedWaitRate, c.Cgroup, c.Manifest)
		if c.CPU.Seconds <= 0 || c.NodeCores < 1 || c.Cgroup == nil || c.Manifest == "" {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
	for _, comp := range []string{agent.CompAPIServer, agent.CompEtcd, agent.CompScheduler, agent.CompController} {
		if _, ok := seen[comp]; !ok {
			t.Errorf("%s not found on the control-plane node (found %v)", comp, comps)
		}
	}
	node := seen[agent.CompEtcd].Node
	sc, err := s.Scrape(ctx, node, agent.CompEtcd)
	if err != nil || sc.URL != "http://127.0.0.1:2381/metrics" || !strings.Contains(string(sc.Body), "etcd_server_has_leader") {
		t.Errorf("etcd scrape: %s %d bytes: %v", sc.URL, len(sc.Body), err)
	}
	if sc, err := s.Scrape(ctx, node, agent.CompScheduler); err != nil || !strings.Contains(string(sc.Body), "scheduler_") {
		t.Errorf("scheduler scrape with the bound token: %+v: %v", sc.ScrapeHeader, err)
	}
	var lines int
	cur, lost, err := s.ReadAudit(ctx, node, agent.AuditCursor{}, 256<<10, 64<<20, func(b []byte) error {
		lines += strings.Count(string(b), "\n")
		return nil
	})
	if err != nil || lines == 0 || lost || cur.Offset == 0 {
		t.Errorf("audit log: %d lines, cursor %+v, lost %v: %v", lines, cur, lost, err)
	}
	t.Logf("audit log: %d lines read, cursor %+v", lines, cur)
}

func onWorker(ctx context.Context, t *testing.T, env *measure.Env, image, worker string) {
	t.Helper()
	o := cpnode.DefaultOptions(image)
	o.Nodes, o.Interval = []string{worker}, 500*time.Millisecond
	s, err := cpnode.Start(ctx, env, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	reps := s.Reports(ctx)
	if len(reps) != 1 || reps[0].Err != "" || reps[0].Report == nil {
		t.Fatalf("reports: %+v", reps)
	}
	r := reps[0].Report
	t.Logf("agent on %s: netns %s, %d cores, elsewhere %v, unread %q", reps[0].Node, r.NetNS, r.Cores, r.Elsewhere, r.Unread)
	if len(r.Components) != 0 {
		t.Errorf("the agent on a worker claimed control-plane processes: %+v", r.Components)
	}
	for _, comp := range []string{agent.CompAPIServer, agent.CompEtcd, agent.CompScheduler, agent.CompController} {
		if r.Elsewhere[comp] < 1 {
			t.Errorf("%s not seen in another network namespace (hostPID): elsewhere %v, unread %q", comp, r.Elsewhere, r.Unread)
		}
	}
	if r.Cores < 1 {
		t.Errorf("cores %d", r.Cores)
	}
	if _, err := s.ControlPlane(ctx); err == nil {
		t.Error("ControlPlane on a worker found components")
	} else if u, ok := cpnode.IsUnreachable(err); !ok || u.Reason != cpnode.NoComponents {
		t.Errorf("ControlPlane on a worker: %v, want %q", err, cpnode.NoComponents)
	} else {
		t.Logf("out of reach, as it should be: %v", err)
	}
	if _, err := s.Scrape(ctx, worker, agent.CompEtcd); err == nil {
		t.Error("etcd scraped from a worker")
	} else {
		t.Logf("etcd scrape on a worker: %v", err)
	}
	if _, err := s.AuditLog(ctx, worker, agent.AuditCursor{}, 1<<16); err == nil {
		t.Error("audit log read on a worker")
	}
}

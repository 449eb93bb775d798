package scenario_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/agent"
	"github.com/kubeslow/kubeslow/internal/kube"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
)

// cpNodeOnWorker runs the control-plane agent on the lab's real node, where no control-plane component runs:
// the lab's control plane runs outside every node (in a network namespace of its own, in the machine's PID
// namespace, which the agent shares through hostPID). The agent must see those processes and not claim them,
// and the session must say the control plane is out of reach; with no node labelled control-plane, Start
// must say so before deploying anything.
func cpNodeOnWorker(t *testing.T, rc *rest.Config) {
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

	if _, err := cpnode.Start(ctx, env, cpnode.DefaultOptions(lab.AgentImage)); err == nil {
		t.Error("Start on a lab without control-plane nodes succeeded")
	} else if u, ok := cpnode.IsUnreachable(err); !ok || u.Reason != cpnode.NoControlPlaneNodes {
		t.Errorf("Start without control-plane nodes: %v, want %q", err, cpnode.NoControlPlaneNodes)
	}

	o := cpnode.DefaultOptions(lab.AgentImage)
	o.Nodes, o.Interval = []string{lab.RealNodeName(1)}, 500*time.Millisecond
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
	if _, err := s.Scrape(ctx, lab.RealNodeName(1), agent.CompEtcd); err == nil {
		t.Error("etcd scraped from a worker")
	} else {
		t.Logf("etcd scrape on a worker: %v", err)
	}
	if _, err := s.AuditLog(ctx, lab.RealNodeName(1), agent.AuditCursor{}, 1<<16); err == nil {
		t.Error("audit log read on a worker")
	}
}

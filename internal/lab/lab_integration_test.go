package lab_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
)

// TestIntegrationLabLifecycle builds (cached) and starts a real lab, runs 200 pods on kwok nodes, finds their creation
// in the audit log, tears the lab down and checks that nothing is left.
func TestIntegrationLabLifecycle(t *testing.T) {
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	const nodes, pods = 20, 200

	st, err := lab.Up(ctx, d, lab.Config{Nodes: nodes, Etcd: lab.EtcdStorage{Kind: "tmpfs"}}, t.Logf)
	if err != nil {
		t.Fatalf("lab up: %v", err)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = lab.Down(context.Background(), d, t.Logf)
		}
	})
	// Running up again is safe and changes nothing.
	if _, err := lab.Up(ctx, d, st.Config, t.Logf); err != nil {
		t.Fatalf("second lab up: %v", err)
	}
	c, err := lab.AdminClient(d)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil || string(b) != "ok" {
		t.Fatalf("/readyz = %q, %v", b, err)
	}
	nl, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, n := range nl.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if ready != nodes {
		t.Fatalf("%d Ready kwok nodes, want %d", ready, nodes)
	}
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", d.AdminKubeconfig(), "get", "nodes", "--no-headers").CombinedOutput()
		if err != nil || strings.Count(string(out), " Ready ") != nodes {
			t.Fatalf("kubectl get nodes from the host: %v\n%s", err, out)
		}
	} else {
		t.Log("kubectl not on PATH: the host-side kubectl check is not run")
	}

	runDeployment(ctx, t, c, pods)
	checkAudit(t, d.AuditLog(), pods)

	// Record what must be gone after down.
	procs := labtest.Processes(t, d)
	if len(procs) < 5 {
		t.Fatalf("only %d lab processes recorded", len(procs))
	}
	if err := lab.Down(context.Background(), d, t.Logf); err != nil {
		t.Fatalf("lab down: %v", err)
	}
	downed = true
	labtest.AssertGone(t, d, procs)
	// Down on nothing is safe.
	if err := lab.Down(context.Background(), d, t.Logf); err != nil {
		t.Fatalf("second lab down: %v", err)
	}
}

func runDeployment(ctx context.Context, t *testing.T, c kubernetes.Interface, pods int) {
	t.Helper()
	labels := map[string]string{"app": "lab-test"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "lab-test", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(pods)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{lab.KwokNodeLabel: lab.KwokNodeLabelValue},
					Tolerations:  []corev1.Toleration{{Key: lab.KwokNodeAnnotation, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					Containers:   []corev1.Container{{Name: "c", Image: "fake-image"}},
				},
			},
		},
	}
	start := time.Now()
	if _, err := c.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	running := map[string]bool{}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = "app=lab-test"
			return c.CoreV1().Pods("default").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = "app=lab-test"
			return c.CoreV1().Pods("default").Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(wctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		running[p.Name] = ev.Type != watch.Deleted && p.Status.Phase == corev1.PodRunning && strings.HasPrefix(p.Spec.NodeName, "kwok-node-")
		n := 0
		for _, r := range running {
			if r {
				n++
			}
		}
		return n >= pods, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d Running pods: %v", pods, err)
	}
	t.Logf("%d pods Running on kwok nodes %s after the Deployment was created", pods, time.Since(start).Round(time.Millisecond))
}

// checkAudit finds the Deployment's creation and the pods' creations (by the ReplicaSet controller) in the
// audit log.
func checkAudit(t *testing.T, path string, pods int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var depCreates, podCreates int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Stage     string                    `json:"stage"`
			Verb      string                    `json:"verb"`
			User      struct{ Username string } `json:"user"`
			ObjectRef *struct {
				Resource, Namespace, Name string
			} `json:"objectRef"`
			ResponseStatus struct{ Code int } `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line is not JSON: %v: %.200s", err, sc.Text())
		}
		if ev.Stage != "ResponseComplete" || ev.Verb != "create" || ev.ObjectRef == nil || ev.ObjectRef.Namespace != "default" || ev.ResponseStatus.Code != 201 {
			continue
		}
		switch {
		case ev.ObjectRef.Resource == "deployments" && ev.ObjectRef.Name == "lab-test":
			depCreates++
		case ev.ObjectRef.Resource == "pods" && ev.User.Username == "system:serviceaccount:kube-system:replicaset-controller":
			podCreates++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if depCreates != 1 || podCreates != pods {
		t.Fatalf("audit log %s: %d deployment creates (want 1), %d pod creates by the replicaset controller (want %d)", filepath.Base(path), depCreates, podCreates, pods)
	}
}

package cpnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func env(objs ...*corev1.Node) *measure.Env {
	c := fake.NewSimpleClientset()
	for _, n := range objs {
		_, _ = c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	}
	return &measure.Env{Client: c, Clock: clock.RealClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Namespace: "ks", RunID: "r1"}
}

// The agent's pod asks for what the node tier needs and no more: host PID and network, the two read-only
// host mounts, SYS_PTRACE and DAC_READ_SEARCH with every other capability dropped, not privileged; it
// tolerates the control-plane taints, is bound to its node by name (no scheduler, no controller) and carries
// the run's labels.
func TestPod(t *testing.T) {
	pod := Pod("ks", "r1", "img", "cp1", "")
	ps := pod.Spec
	if ps.NodeName != "cp1" || ps.Affinity != nil || pod.Namespace != "ks" || !kube.Selector("r1").Matches(labels.Set(pod.Labels)) {
		t.Errorf("node %q affinity %+v namespace %q labels %v", ps.NodeName, ps.Affinity, pod.Namespace, pod.Labels)
	}
	if !ps.HostPID || !ps.HostNetwork || ps.HostIPC || ps.AutomountServiceAccountToken == nil || !*ps.AutomountServiceAccountToken {
		t.Errorf("namespaces/token: %+v", ps)
	}
	for _, v := range ps.Volumes {
		if v.HostPath == nil || (v.HostPath.Path != "/proc" && v.HostPath.Path != "/sys/fs/cgroup") {
			t.Errorf("volume %+v", v)
		}
	}
	c := ps.Containers[0]
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("mount %s writable", m.MountPath)
		}
	}
	sc := c.SecurityContext
	if sc.Privileged != nil && *sc.Privileged || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 2 {
		t.Errorf("security context %+v caps %+v", sc, sc.Capabilities)
	}
	if strings.Join(c.Args, " ") != "pause" || c.Image != "img" {
		t.Errorf("container %v %s", c.Args, c.Image)
	}
	for _, taint := range []corev1.Taint{{Key: LabelControlPlane, Effect: corev1.TaintEffectNoSchedule}, {Key: LabelMaster, Effect: corev1.TaintEffectNoSchedule},
		{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoExecute}} {
		if why := untolerated(node("n", nil, taint)); why != "" {
			t.Errorf("%v: %s", taint, why)
		}
	}
	if why := untolerated(node("n", nil, corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule})); !strings.Contains(why, "dedicated=infra:NoSchedule") {
		t.Errorf("a foreign taint: %q", why)
	}
	if sa := Pod("ks", "r1", "img", "cp1", "sa").Spec.ServiceAccountName; sa != "sa" {
		t.Errorf("service account %q", sa)
	}
}

// running makes the fake API server act as a node's kubelet would for the agent pods: each created pod is
// named (the fake does not honour generateName) and, on the nodes in run, Running.
func running(c *fake.Clientset, run ...string) {
	n := 0
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, apiruntime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		n++
		p.Name = fmt.Sprintf("%s%d", p.GenerateName, n)
		if slices.Contains(run, p.Spec.NodeName) {
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
		}
		return false, nil, nil
	})
}

func TestStartOutOfReach(t *testing.T) {
	ctx := context.Background()
	_, err := Start(ctx, env(), Options{})
	if u, ok := IsUnreachable(err); !ok || u.Reason != NoImage {
		t.Errorf("no image: %v", err)
	}
	// A managed cluster: workers only.
	e := env(node("w1", map[string]string{"kubernetes.io/os": "linux"}), node("w2", nil))
	_, err = Start(ctx, e, DefaultOptions("img"))
	if u, ok := IsUnreachable(err); !ok || u.Reason != NoControlPlaneNodes || !strings.Contains(u.Detail, "none of the 2 nodes") || !strings.Contains(u.Fix, "EKS") {
		t.Errorf("managed: %v", err)
	}
	if l, _ := e.Client.CoreV1().Pods("ks").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Error("an agent pod was created for no node")
	}
	// A control-plane node whose taint the agent does not tolerate gets no pod (as a DaemonSet would not place
	// one): NotRunning at once, the node named with the reason.
	e = env(node("cp1", map[string]string{LabelControlPlane: ""}, corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}), node("w1", nil))
	o := DefaultOptions("img")
	_, err = Start(ctx, e, o)
	if u, ok := IsUnreachable(err); !ok || u.Reason != NotRunning || !strings.Contains(u.Detail, "cp1: the agent does not tolerate its taint dedicated=x:NoSchedule") {
		t.Errorf("not running: %v", err)
	}
	if l, _ := e.Client.CoreV1().Pods("ks").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("a pod was created on the tainted node: %+v", l.Items)
	}
	// Two control-plane nodes, the agent running on one only (the other's kubelet never starts it): the
	// session runs on cp1, cp2 named missing with its pod's state once the wait ends; Close deletes both pods,
	// the running one and the one that never ran.
	e = env(node("cp1", map[string]string{LabelControlPlane: ""}), node("cp2", map[string]string{LabelControlPlane: ""}), node("w1", nil))
	running(e.Client.(*fake.Clientset), "cp1")
	o.Timeout = 1500 * time.Millisecond
	s, err := Start(ctx, e, o)
	if err != nil {
		t.Fatal(err)
	}
	pods, _ := e.Client.CoreV1().Pods("ks").List(ctx, metav1.ListOptions{})
	bound := map[string]bool{}
	for _, p := range pods.Items {
		bound[p.Spec.NodeName] = true
	}
	if len(pods.Items) != 2 || !bound["cp1"] || !bound["cp2"] {
		t.Errorf("agent pods %+v, want one bound to each control-plane node", pods.Items)
	}
	if got := s.Nodes(); len(got) != 1 || got[0] != "cp1" || !strings.Contains(s.missingText(), "cp2: agent kubeslow-cp-agent-") {
		t.Errorf("nodes %v, missing %q", got, s.missingText())
	}
	s.Close(ctx)
	if l, _ := e.Client.CoreV1().Pods("ks").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("agent pods left after Close: %+v", l.Items)
	}
	// A namespace where pods may not be created: Forbidden, with the grant to ask for.
	e = env(node("cp1", map[string]string{LabelControlPlane: ""}))
	e.Client.(*fake.Clientset).PrependReactor("create", "pods", func(a k8stesting.Action) (bool, apiruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("no"))
	})
	if _, err := Start(ctx, e, o); err == nil {
		t.Error("created pods without the right")
	} else if u, ok := IsUnreachable(err); !ok || u.Reason != Forbidden || !strings.Contains(u.Fix, "create pods") {
		t.Errorf("forbidden: %v", err)
	}
}

func TestComponents(t *testing.T) {
	reps := []NodeReport{
		{Node: "w1", Report: &agent.ControlPlane{Cores: 4, Elsewhere: map[string]int{"etcd": 1}}},
		{Node: "cp1", Report: &agent.ControlPlane{Cores: 8, PSI: &agent.PSIPair{SomeWindow: 12},
			Components: []agent.Component{{Name: agent.CompEtcd, PID: 10, Flags: map[string]string{"listen-metrics-urls": "http://127.0.0.1:2381"}, CPU: agent.ProcCPU{Rate: 1.5, SchedWaitRate: 0.4}}}}},
		{Node: "cp2", Err: "exec: timeout"},
	}
	cs, err := Components(reps)
	if err != nil || len(cs) != 1 {
		t.Fatalf("%+v %v", cs, err)
	}
	c := cs[0]
	if c.Node != "cp1" || c.NodeCores != 8 || c.NodePSI.SomeWindow != 12 || c.CPU.Rate != 1.5 || c.CPU.SchedWaitRate != 0.4 {
		t.Errorf("%+v", c)
	}
	if v, ok := c.Flag(agent.CompEtcd, "listen-metrics-urls"); !ok || v != "http://127.0.0.1:2381" || !c.Embeds(agent.CompEtcd) {
		t.Errorf("flag %q %v", v, ok)
	}
	_, err = Components(reps[:1])
	if u, ok := IsUnreachable(err); !ok || u.Reason != NoComponents || !strings.Contains(u.Detail, "w1: no control-plane process") || !strings.Contains(u.Detail, "etcd:1") {
		t.Errorf("workers only: %v", err)
	}
}

// MetricsAccess: the binding to system:monitoring is made only when asked, carries the run's labels (so
// `kubeslow cleanup` finds it), binds the agent's service account that the agent's pod runs as, and is deleted
// by Close; without it no service account nor binding is created and the agents run as the namespace's default.
func TestMetricsAccess(t *testing.T) {
	ctx := context.Background()
	for _, asked := range []bool{false, true} {
		e := env(node("cp1", map[string]string{LabelControlPlane: ""}))
		c := e.Client.(*fake.Clientset)
		running(c, "cp1")
		o := DefaultOptions("img")
		o.MetricsAccess, o.Timeout = asked, 5*time.Second
		s, err := Start(ctx, e, o)
		if err != nil {
			t.Fatalf("asked %v: %v", asked, err)
		}
		crbs, _ := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
		sas, _ := c.CoreV1().ServiceAccounts("ks").List(ctx, metav1.ListOptions{})
		pods, err := c.CoreV1().Pods("ks").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("agent pods %+v %v, want one", pods, err)
		}
		ps := pods.Items[0].Spec
		if !asked {
			if len(crbs.Items) != 0 || len(sas.Items) != 0 || ps.ServiceAccountName != "" {
				t.Errorf("not asked: %d bindings, %d service accounts, the agent as %q", len(crbs.Items), len(sas.Items), ps.ServiceAccountName)
			}
			s.Close(ctx)
			continue
		}
		if len(crbs.Items) != 1 || len(sas.Items) != 1 {
			t.Fatalf("asked: %d bindings, %d service accounts, want 1 and 1", len(crbs.Items), len(sas.Items))
		}
		crb := crbs.Items[0]
		if !kube.Selector("r1").Matches(labels.Set(crb.Labels)) {
			t.Errorf("binding labels %v: not the run's (kubeslow cleanup --run r1 would miss it)", crb.Labels)
		}
		if crb.RoleRef.Name != "system:monitoring" || crb.RoleRef.Kind != "ClusterRole" ||
			len(crb.Subjects) != 1 || crb.Subjects[0].Kind != "ServiceAccount" || crb.Subjects[0].Name != saName || crb.Subjects[0].Namespace != "ks" {
			t.Errorf("binding %+v", crb)
		}
		if sa := sas.Items[0]; sa.Name != saName || !kube.Selector("r1").Matches(labels.Set(sa.Labels)) || ps.ServiceAccountName != saName {
			t.Errorf("service account %s %v, the agent as %q", sa.Name, sa.Labels, ps.ServiceAccountName)
		}
		s.Close(ctx)
		if crbs, _ := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{}); len(crbs.Items) != 0 {
			t.Errorf("binding left after Close: %+v", crbs.Items)
		}
		if l, _ := c.CoreV1().Pods("ks").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
			t.Error("agent pod left after Close")
		}
	}
}

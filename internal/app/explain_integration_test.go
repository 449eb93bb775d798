package app

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/lab/pki"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// appLab is the lab this package's integration tests share (labtest.Shared), in the order of their files:
// TestIntegrationRBACViewUser (it starts the lab),
// TestIntegrationBenchPods (the healthy lab), TestIntegrationExplain, TestIntegrationFaults, TestIntegrationImagePushKubeconfigOnly,
// TestIntegrationNodeDNS, TestIntegrationRunExplains, TestIntegrationWatchInstall and
// TestIntegrationWatchNodeAgent: five kwok nodes and two real nodes with the agent image (bench net's pod->pod
// path between nodes needs the second).
func appLab(t *testing.T) lab.Config {
	return lab.Config{Nodes: 5, RealNodes: 2, AgentBinary: labtest.Binary(t)}
}

// TestIntegrationExplain: `kubeslow explain` on pods kubeslow did not create, read by a user bound only to
// the view ClusterRole in their namespace, creating nothing:
//   - a pod on the real node whose init container runs 5 s (`agent burn --for 5s`) and whose readiness probe
//     waits initialDelaySeconds 10 before its first try: the init step within 1.5 s of 5 s, the readiness step
//     within 1.5 s of 10 s, and the readiness verdict (KS-EXPLAIN-PROBE, the probe's delay) first;
//   - the same verdict by a second mechanism: no initial delay, an app that opens its port only after 8 s
//     (its probe, every second, fails until then): the readiness step within 1.5 s of 8 s with the failures
//     counted, KS-EXPLAIN-PROBE first as "failed until the app was ready";
//   - a pod that asks for more CPU than any node has: its scheduling step pending, with the scheduler's
//     FailedScheduling "Insufficient cpu" (a wait of another kind, named from the Events);
//   - bad input: a pod that does not exist and an unknown kind, each one line on stderr and exit 2;
//   - nothing created: the namespace's objects are the same after as before.
func TestIntegrationExplain(t *testing.T) {
	d, rc := labtest.Shared(t, appLab(t))
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(rc)
	const ns, user = "explain-it", "explain-viewer"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// The user may read the namespace (view) and, cluster-wide, only what `explain` reads besides: nodes are
	// not read, so view in the namespace is all.
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pki.EnsureCert(d.PKIDir(), pki.Cert{Name: user, CN: user}); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "viewer.kubeconfig")
	if err := pki.WriteKubeconfig(d.PKIDir(), kc, rc.Host, user); err != nil {
		t.Fatal(err)
	}

	// The pod of known phases: init 5 s, then the probe's initial delay of 10 s (each probe every second).
	agent := burnContainer
	app := agent("app", "--listen", ":8080")
	app.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
		InitialDelaySeconds: 10, PeriodSeconds: 1}
	slow := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "init-and-probe", Namespace: ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: lab.RealNodeName(1)},
			InitContainers: []corev1.Container{agent("warm-up", "--for", "5s")}, Containers: []corev1.Container{app}}}
	// A second mechanism behind the same verdict: no initial delay, an app that opens its port only after 8 s
	// (`agent burn --listen-after 8s`), so its readiness probe (every second) fails until then.
	late := agent("app", "--listen", ":8080", "--listen-after", "8s")
	late.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1}
	lateApp := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late-listener", Namespace: ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: lab.RealNodeName(1)}, Containers: []corev1.Container{late}}}
	big := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "too-big", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{agent("app")}}}
	big.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100000")}
	for _, p := range []*corev1.Pod{slow, lateApp, big} {
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{slow.Name, lateApp.Name} {
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("pod %s not Ready: %v", name, err)
		}
	}
	// FailedScheduling is written once the scheduler tried.
	labtest.Eventually(ctx, t, "FailedScheduling of "+big.Name, func() error {
		evs, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + big.Name + ",reason=FailedScheduling"})
		if err == nil && len(evs.Items) == 0 {
			err = errNoEvent
		}
		return err
	})
	before := snapshot(ctx, t, admin, ns)

	explain := func(args ...string) result.Explanation {
		t.Helper()
		code, out, errOut := runArgs(t, append([]string{"explain", "--kubeconfig", kc, "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("explain %v: exit %d\n%s", args, code, errOut)
		}
		var e result.Explanation
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("explain %v: %v\n%s", args, err, out)
		}
		return e
	}
	step := func(p result.PodTimeline, name string) result.Step {
		for _, s := range p.Steps {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("pod %s: no step %s in %+v", p.Name, name, p.Steps)
		return result.Step{}
	}

	t.Run("init-and-probe", func(t *testing.T) {
		e := explain("pod", ns+"/"+slow.Name)
		if len(e.Pods) != 1 {
			t.Fatalf("%d pods", len(e.Pods))
		}
		p := e.Pods[0]
		for _, s := range p.Steps {
			t.Logf("step %-16s %-8s %6.2f s  %s (%s)", s.Name, s.Status, s.Seconds, s.Source, s.Precision)
		}
		for name, truth := range map[string]float64{"init:warm-up": 5, "readiness": 10} {
			if s := step(p, name); s.Status != result.StepDone || math.Abs(s.Seconds-truth) > 1.5 {
				t.Errorf("step %s: %s %.2f s, want within 1.5 s of %.0f s", name, s.Status, s.Seconds, truth)
			}
		}
		if len(e.Verdicts) == 0 || e.Verdicts[0].ID != "KS-EXPLAIN-PROBE" {
			t.Errorf("verdicts %+v: want KS-EXPLAIN-PROBE first", e.Verdicts)
		}
		for _, v := range e.Verdicts {
			t.Logf("verdict %s (%s): %s", v.ID, v.Severity, v.Summary)
		}
		if !p.Events.Readable {
			t.Errorf("Events not readable by a view user: %+v", p.Events)
		}
	})
	t.Run("late-listener", func(t *testing.T) {
		e := explain("pod", ns+"/"+lateApp.Name)
		p := e.Pods[0]
		for _, s := range p.Steps {
			t.Logf("step %-16s %-8s %6.2f s  %s (%s) %v", s.Name, s.Status, s.Seconds, s.Source, s.Precision, s.Values)
		}
		// The truth: the port opens 8 s after the container starts; the probe's next tick (1 s) passes.
		if s := step(p, "readiness"); s.Status != result.StepDone || math.Abs(s.Seconds-8) > 1.5 || s.Values["probe_failures"] < 3 {
			t.Errorf("readiness step: %s %.2f s, %v probe failures: want within 1.5 s of 8 s, failures counted", s.Status, s.Seconds, s.Values["probe_failures"])
		}
		if len(e.Verdicts) == 0 || e.Verdicts[0].ID != "KS-EXPLAIN-PROBE" || !strings.Contains(e.Verdicts[0].Title, "failed until") {
			t.Errorf("verdicts %+v: want KS-EXPLAIN-PROBE first, the probe failing until the app was ready", e.Verdicts)
		}
		for _, v := range e.Verdicts {
			t.Logf("verdict %s (%s): %s — %s", v.ID, v.Severity, v.Title, v.Summary)
		}
	})
	t.Run("failed-scheduling", func(t *testing.T) {
		e := explain("pod", ns+"/"+big.Name)
		s := step(e.Pods[0], "scheduling")
		found := false
		for _, ev := range s.Events {
			found = found || (ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, "Insufficient cpu"))
		}
		if s.Status != result.StepPending || !found {
			t.Errorf("scheduling step %s with events %+v: want pending with FailedScheduling Insufficient cpu", s.Status, s.Events)
		}
		named := false
		for _, v := range e.Verdicts {
			named = named || strings.Contains(v.Summary+v.Title, "Insufficient cpu")
		}
		if !named {
			t.Errorf("no verdict names Insufficient cpu: %+v", e.Verdicts)
		}
	})
	t.Run("bad-input", func(t *testing.T) {
		for _, args := range [][]string{{"pod", ns + "/nope"}, {"foo", ns + "/x"}} {
			code, out, errOut := runArgs(t, append([]string{"explain", "--kubeconfig", kc}, args...)...)
			if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || errOut == "" {
				t.Errorf("explain %v: exit %d, stdout %q, stderr %q: want exit 2 and one line", args, code, out, errOut)
			}
		}
	})
	if after := snapshot(ctx, t, admin, ns); after != before {
		t.Errorf("explain changed the namespace:\nbefore %s\nafter  %s", before, after)
	}
	// The pods go with the namespace; the lab is left as it was for the next test. They are deleted first with
	// a second's grace (their spec's is 30 s): the namespace controller, 5 s after the namespace's delete, then
	// finds them gone and removes it at once (10 s with the pods' own grace, 2026-11-29).
	if err := admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	labtest.Eventually(ctx, t, "namespace "+ns+" gone", func() error {
		if _, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			return errNotGone
		}
		return nil
	})
}

type sentinel string

func (s sentinel) Error() string { return string(s) }

const (
	errNoEvent sentinel = "no such Event yet"
	errNotGone sentinel = "still there"
)

// snapshot names every pod, ConfigMap and Service in ns (anything explain created would show) and the
// resourceVersion of each Ready pod (a pod still pending may be written by the scheduler meanwhile).
func snapshot(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string) string {
	t.Helper()
	var b strings.Builder
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		b.WriteString("pod/" + p.Name)
		if p.Status.Phase == corev1.PodRunning {
			b.WriteString("@" + p.ResourceVersion)
		}
		b.WriteString(" ")
	}
	cms, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cms.Items {
		b.WriteString("configmap/" + o.Name + " ")
	}
	svcs, err := c.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range svcs.Items {
		b.WriteString("service/" + o.Name + " ")
	}
	return b.String()
}

// burnContainer is a container of the lab's agent image running `kubeslow agent burn ARGS` (a workload of known
// timing: --for, --listen, --listen-after).
func burnContainer(name string, args ...string) corev1.Container {
	return corev1.Container{Name: name, Image: lab.AgentImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: append([]string{"/kubeslow", "agent", "burn"}, args...)}
}

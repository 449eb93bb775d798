package app

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/explain/passive"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationRunExplains: `kubeslow run` explains the slowest pods that started in its window and were not
// its own (pods.explained), as `kubeslow explain pod` would, creating nothing. While a run of pods.explained
// alone observes a 30 s window, the test creates (through the API, as a user) a pod on a real node whose init
// container runs 3 s and whose readiness probe waits initialDelaySeconds 15: it becomes Ready ~19 s after its
// creation, inside the window however long the run took to start it. The report names that pod with its
// start-up, its longest step (readiness) and the probe's verdict first.
func TestIntegrationRunExplains(t *testing.T) {
	d, rc := labtest.Shared(t, appLab(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := kubernetes.NewForConfigOrDie(rc)
	const ns, name = "runexplain-it", "slow-ready"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, c, ns) })
	app := burnContainer("app", "--listen", ":8080")
	app.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
		InitialDelaySeconds: 15, PeriodSeconds: 1}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: lab.RealNodeName(1)}, TerminationGracePeriodSeconds: new(int64),
			InitContainers: []corev1.Container{burnContainer("warm-up", "--for", "3s")}, Containers: []corev1.Container{app}}}

	args := []string{"run", "--kubeconfig", d.AdminKubeconfig(), "--only", passive.Name, "--window", "30s", "--out-dir", "", "-o", "json"}
	rep, code := runThrough(ctx, t, c, args, func() {
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Error(err)
		}
	})
	if code != 0 && code != 1 {
		t.Errorf("run: exit %d, want a report (0 or 1)", code)
	}
	r := find(rep, passive.Name)
	if r == nil || r.Status != result.StatusPass {
		t.Fatalf("%s: %+v", passive.Name, r)
	}
	t.Logf("%s: %s", passive.Name, r.Reason)
	var rec *result.Record
	for i := range r.Records {
		if r.Records[i].ID == ns+"/"+name {
			rec = &r.Records[i]
		}
		if strings.HasPrefix(r.Records[i].ID, "kubeslow-") {
			t.Errorf("a pod of kubeslow's explained: %s", r.Records[i].ID)
		}
	}
	if rec == nil {
		t.Fatalf("the slow pod %s/%s is not explained: %+v", ns, name, r.Records)
	}
	// The truth: init 3 s, the probe's first try 15 s after the app starts; whole-second timestamps.
	if s := rec.Values["startup_seconds"]; s < 17 || s > 24 || rec.Labels["longest_step"] != "readiness" ||
		rec.Values["longest_step_seconds"] < 13.5 || rec.Values["longest_step_seconds"] > 16.5 || rec.Labels["verdict"] != "KS-EXPLAIN-PROBE" {
		t.Errorf("explained as %+v: want a start-up of ~19 s, readiness ~15 s its longest step, KS-EXPLAIN-PROBE first", rec)
	}
	if metric(r, passive.MetricExplained, nil) < 1 {
		t.Errorf("%s %v", passive.MetricExplained, metric(r, passive.MetricExplained, nil))
	}
}

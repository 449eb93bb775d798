package podres_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure/podres"
	"github.com/kubeslow/kubeslow/internal/measure/podres/podrestest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

var (
	pod    = podrestest.Pod
	oomPod = podrestest.OOMPod
	sweep  = podrestest.Sweep
	kill   = podrestest.Kill
)

type cg = podrestest.CG

const w = podrestest.Window

func input(t *testing.T, after []cg, pods []corev1.Pod, events ...corev1.Event) podres.Input {
	return podrestest.Input(t, after, pods, events...)
}

func evaluate(rs ...result.Result) ([]result.Finding, []result.RuleEvaluation) {
	r := ruletest.Report(nil, rs...)
	r.Start = ruletest.T0
	return rule.Evaluate(r, podres.Rules())
}

func find(fs []result.Finding, id string) *result.Finding {
	for i := range fs {
		if fs[i].ID == id {
			return &fs[i]
		}
	}
	return nil
}

// TestThrottling: the line is strict (25% is not over it); a pod without a CPU limit is not evaluated (no
// CFS periods, no metric) however busy; throttling without a symptom is info and says why; a failed probe
// (an Unhealthy Event in the window) or a container not Ready makes it a warning; an Unhealthy Event older
// than the window does not.
func TestThrottling(t *testing.T) {
	pods := []corev1.Pod{pod("app", "at-line", "u1", "100m", ""), pod("app", "busy", "u2", "100m", ""), pod("app", "free", "u3", "", ""),
		pod("app", "probed", "u4", "50m", "")}
	after := []cg{
		{NS: "app", Pod: "at-line", Periods: 1000, Throttled: 250, Usage: 8, Quota: 10000},
		{NS: "app", Pod: "busy", Periods: 1000, Throttled: 900, Usage: 10, Quota: 10000},
		{NS: "app", Pod: "free", Usage: 190},
		{NS: "app", Pod: "probed", Periods: 1000, Throttled: 990, Usage: 5, Quota: 5000},
	}
	// kubeslow's own node agent, throttled under its limit: not the user's, not evaluated.
	agentPod := pod("kubeslow-x", "kubeslow-node-agent-abc", "u9", "250m", "128Mi")
	agentPod.Labels = kube.RunLabels("x")
	pods = append(pods, agentPod)
	after = append(after, cg{NS: "kubeslow-x", Pod: "kubeslow-node-agent-abc", Periods: 100, Throttled: 90, Usage: 2, Quota: 25000})
	old := corev1.Event{Reason: "Unhealthy", InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "app", Name: "probed"},
		Message: "Readiness probe failed: context deadline exceeded", Count: 3, LastTimestamp: metav1.NewTime(ruletest.T0.Add(-time.Hour))}
	res := podres.Analyze(input(t, after, pods, old))
	for _, m := range res.Metrics {
		if m.Labels["pod"] == "free" || m.Labels["namespace"] == "kubeslow-x" {
			t.Errorf("a pod without a CPU limit read %s = %g", m.Name, m.Value)
		}
	}
	if m := res.Metric(podres.MetricUnlimited, nil); m == nil || m.Value != 1 {
		t.Errorf("unlimited containers: %+v", m)
	}
	f, _ := evaluate(res)
	th := find(f, "KS-POD-THROTTLED")
	if th == nil || th.Severity != result.SeverityInfo || len(th.Items) != 2 {
		t.Fatalf("no symptom (the Event is an hour old): want an info finding on busy and probed: %+v", th)
	}
	for _, it := range th.Items {
		if strings.Contains(it.Key, "at-line") || !strings.Contains(it.Summary, "no symptom ties it to slowness") {
			t.Errorf("item %s: %s", it.Key, it.Summary)
		}
	}
	// The same Event in the window, and a container not Ready.
	recent := old
	recent.LastTimestamp = metav1.NewTime(ruletest.T0.Add(w / 2))
	res = podres.Analyze(input(t, after, pods, recent))
	f, _ = evaluate(res)
	th = find(f, "KS-POD-THROTTLED")
	if th == nil || th.Severity != result.SeverityWarning || !strings.Contains(th.Items[0].Key, "pod=probed") ||
		!strings.Contains(th.Summary, "probes failed 3 times in the window") || !strings.Contains(th.Summary, "99%") {
		t.Fatalf("a failed probe in the window: %+v", th)
	}
	t.Logf("%s: %s", th.Severity, th.Summary)
	notReady := append([]corev1.Pod(nil), pods...)
	notReady[1].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	res = podres.Analyze(input(t, after, notReady))
	if th = find(mustEval(res), "KS-POD-THROTTLED"); th == nil || th.Severity != result.SeverityWarning || !strings.Contains(th.Summary, "running but not Ready") {
		t.Fatalf("a container not Ready: %+v", th)
	}
}

func mustEval(rs ...result.Result) []result.Finding { f, _ := evaluate(rs...); return f }

// TestOOM: a container OOMKilled at its own limit is named with its limit, peak and restarts; the kernel's
// kill in its own cgroup is folded into the same item; a kill in an ancestor's cgroup (the node's) is
// KS-NODE-OOM, naming the pod, and not KS-POD-OOMKILLED; kills older than the run are info and say how old;
// a pod that was not OOM-killed raises nothing.
func TestOOM(t *testing.T) {
	own := "11111111-2222-3333-4444-555555555555"
	node := "66666666-2222-3333-4444-555555555555"
	pods := []corev1.Pod{oomPod("leaky", own, "64Mi", ruletest.T0.Add(w-10*time.Second)), oomPod("victim", node, "", ruletest.T0.Add(w-5*time.Second)),
		pod("app", "fine", "77777777-2222-3333-4444-555555555555", "", "1Gi")}
	after := []cg{{NS: "app", Pod: "leaky", Usage: 1, Peak: 67108864}, {NS: "app", Pod: "victim", Usage: 1, Peak: 300 << 20}, {NS: "app", Pod: "fine", Usage: 1, Peak: 10 << 20}}
	res := podres.Analyze(input(t, after, pods))
	sw := sweep(kill(own, "/kubepods/burstable/pod"+own+"/"+strings.Repeat("a", 64), 20), kill(node, "/pods-lab-node-1", 8))
	f, _ := evaluate(res, sw)
	pf := find(f, "KS-POD-OOMKILLED")
	if pf == nil || pf.Severity != result.SeverityError || len(pf.Items) != 1 || !strings.Contains(pf.Items[0].Key, "pod=leaky") {
		t.Fatalf("KS-POD-OOMKILLED: %+v", pf)
	}
	for _, want := range []string{"memory limit 64 MiB", "peak 64 MiB (its pod's cgroup)", "restarts 4", "last killed 10s before", "logged 1 kills in its memory cgroup"} {
		if !strings.Contains(pf.Summary, want) {
			t.Errorf("summary %q: want %q", pf.Summary, want)
		}
	}
	t.Logf("%s", pf.Summary)
	nf := find(f, "KS-NODE-OOM")
	if nf == nil || nf.Severity != result.SeverityError || !strings.Contains(nf.Summary, "app/victim (app)") || !strings.Contains(nf.Summary, "/pods-lab-node-1") {
		t.Fatalf("KS-NODE-OOM: %+v", nf)
	}
	t.Logf("%s", nf.Summary)

	// The same kills a day before the run: lowered, with their age.
	day := 24 * time.Hour
	pods[0], pods[1] = oomPod("leaky", own, "64Mi", ruletest.T0.Add(-day)), oomPod("victim", node, "", ruletest.T0.Add(-day))
	res = podres.Analyze(input(t, after, pods))
	sw = sweep(kill(own, "/kubepods/burstable/pod"+own, day.Seconds()), kill(node, "/", day.Seconds()))
	f, _ = evaluate(res, sw)
	for _, id := range []string{"KS-POD-OOMKILLED", "KS-NODE-OOM"} {
		if x := find(f, id); x == nil || x.Severity != result.SeverityInfo || !strings.Contains(x.Summary, "before this run began") {
			t.Errorf("%s a day old: %+v", id, x)
		}
	}
	// A node whose log holds a kill of this run, one of a live pod a day ago and one of a pod gone: two
	// items, the current one naming only this run's victim, the old one info; the gone pod's kill is left out.
	pods[1] = oomPod("victim", node, "", ruletest.T0.Add(w-5*time.Second))
	res = podres.Analyze(input(t, after, pods))
	gone := "99999999-2222-3333-4444-555555555555"
	f, _ = evaluate(res, sweep(kill(gone, "/", day.Seconds()), kill(own, "/", day.Seconds()), kill(node, "/pods-lab-node-1", 8)))
	nf = find(f, "KS-NODE-OOM")
	if nf == nil || nf.Severity != result.SeverityError || len(nf.Items) != 2 || nf.Items[0].Key != "node=n1" ||
		!strings.Contains(nf.Items[0].Summary, "app/victim") || strings.Contains(nf.Items[0].Summary, "leaky") ||
		!strings.Contains(nf.Items[1].Summary, "app/leaky") || !strings.Contains(nf.Items[1].Summary, "before this run began") ||
		strings.Contains(nf.Summary+nf.Items[1].Summary, gone) {
		t.Fatalf("a current and two past node-wide kills: %+v", nf)
	}
	// Only a gone pod's old kill: nothing.
	if f, _ = evaluate(res, sweep(kill(gone, "/", day.Seconds()))); find(f, "KS-NODE-OOM") != nil {
		t.Fatalf("a gone pod's kill a day ago: %+v", find(f, "KS-NODE-OOM"))
	}
	// Nothing killed.
	res = podres.Analyze(input(t, after, []corev1.Pod{pods[2]}))
	if f, ev := evaluate(res, sweep()); len(f) != 0 || len(ev) != 3 {
		t.Fatalf("nothing killed: %+v %+v", f, ev)
	}
}

// TestRecorded: the lab's recording (TestIntegrationPodResources, 30 s window on lab-node-1): the busy loop
// under 100m is throttled without a symptom (info), the four threads under 50m are throttled and fail their
// readiness probe (warning); oom-own is OOMKilled at its own 64 MiB; oom-node, with no limit, was killed
// in the node's capped cgroup (kernel oom_memcg=/kubeslow-lab/pods-lab-node-1) and is KS-NODE-OOM's, not
// KS-POD-OOMKILLED's; the idle pod without a limit reads no throttling. The healthy recording raises none.
func TestRecorded(t *testing.T) {
	rep := podrestest.Recorded(t, "faults")
	res := rep.Result(podres.Name)
	t.Logf("faults: %s", res.Reason)
	for _, m := range res.Metrics {
		if m.Labels["pod"] == "healthy" && m.Name == podres.MetricThrottledRatio {
			t.Errorf("the pod without a limit reads throttling: %+v", m)
		}
	}
	f, _ := rule.Evaluate(rep, podres.Rules())
	byPod := func(id string) map[string]result.Item {
		out := map[string]result.Item{}
		if x := find(f, id); x != nil {
			for _, it := range x.Items {
				for _, p := range []string{"spin-100m", "burst-50m", "oom-own", "oom-node", "healthy"} {
					if strings.Contains(it.Key, "pod="+p+" ") || strings.HasSuffix(it.Key, "pod="+p) || strings.Contains(it.Summary, "podres-test/"+p) {
						out[p] = it
					}
				}
			}
			t.Logf("%s (%s): %s", id, x.Severity, x.Summary)
		}
		return out
	}
	th := byPod("KS-POD-THROTTLED")
	if th["spin-100m"].Key == "" || !strings.Contains(th["spin-100m"].Summary, "no symptom") || th["burst-50m"].Key == "" ||
		!strings.Contains(th["burst-50m"].Summary, "probes failed") || th["healthy"].Key != "" {
		t.Errorf("KS-POD-THROTTLED items: %+v", th)
	}
	if x := find(f, "KS-POD-THROTTLED"); x == nil || x.Severity != result.SeverityWarning {
		t.Errorf("KS-POD-THROTTLED: %+v", x)
	}
	oom := byPod("KS-POD-OOMKILLED")
	if oom["oom-own"].Key == "" || !strings.Contains(oom["oom-own"].Summary, "memory limit 64 MiB") || oom["oom-node"].Key != "" {
		t.Errorf("KS-POD-OOMKILLED items: %+v", oom)
	}
	if x := find(f, "KS-NODE-OOM"); x == nil || !strings.Contains(x.Summary, "podres-test/oom-node") || !strings.Contains(x.Summary, "/kubeslow-lab/pods-lab-node-1") {
		t.Errorf("KS-NODE-OOM: %+v", x)
	}
	healthy := podrestest.Recorded(t, "healthy")
	if f, _ := rule.Evaluate(healthy, podres.Rules()); len(f) != 0 {
		t.Errorf("healthy: %+v", f)
	}
}

// TestSlimKeepsWhatAnalyzeReads: the recorded runs' pods, full as the API returned them and slimmed as
// ListPods keeps them, give the same result; and the slim pod is a fraction of the full one.
func TestSlimKeepsWhatAnalyzeReads(t *testing.T) {
	for _, name := range []string{"faults", "healthy"} {
		in, err := podres.Load(filepath.Join("testdata", "recorded-"+name))
		if err != nil {
			t.Fatal(err)
		}
		full, fullBytes, slimBytes := podres.Analyze(in), 0, 0
		for _, ps := range []*[]corev1.Pod{&in.PodsStart, &in.PodsEnd} {
			slim := make([]corev1.Pod, len(*ps))
			for i := range *ps {
				slim[i] = podres.Slim(&(*ps)[i])
				a, _ := json.Marshal((*ps)[i])
				b, _ := json.Marshal(slim[i])
				fullBytes, slimBytes = fullBytes+len(a), slimBytes+len(b)
			}
			*ps = slim
		}
		got := podres.Analyze(in)
		if !reflect.DeepEqual(full, got) {
			t.Errorf("%s: the slim pods' result differs:\nfull %s\nslim %s", name, full.Reason, got.Reason)
		}
		t.Logf("%s: pods as JSON %d bytes full, %d slim", name, fullBytes, slimBytes)
		if slimBytes*2 > fullBytes {
			t.Errorf("%s: slim pods %d bytes of %d: not much smaller", name, slimBytes, fullBytes)
		}
	}
}

package explain

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubeslow/kubeslow/pkg/result"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func step(t *testing.T, pt result.PodTimeline, name string) result.Step {
	t.Helper()
	for _, s := range pt.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("pod %s has no step %s: %+v", pt.Name, name, pt.Steps)
	return result.Step{}
}

func valid(t *testing.T, x *result.Explanation) {
	t.Helper()
	var buf bytes.Buffer
	if err := result.EncodeExplanation(&buf, x); err != nil {
		t.Fatal(err)
	}
	if _, err := result.DecodeExplanation(&buf); err != nil {
		t.Fatal(err)
	}
}

// TestInitAndProbe: an init container that sleeps 5 s and a readiness probe with initialDelaySeconds 10. The
// phases come out of the conditions and container times; readiness is the longest, explained by the probe's
// delay; the init container's run is the second verdict, with its CPU limit.
func TestInitAndProbe(t *testing.T) {
	x := Explain(initProbePod())
	valid(t, x)
	pt := x.Pods[0]
	want := map[string]float64{StepScheduling: 0.183412, StepSandbox: 0.816588, "init:setup": 5, StepStart: 1, StepReadiness: 10, StepEndpoints: 1}
	for name, sec := range want {
		s := step(t, pt, name)
		if d := s.Seconds - sec; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: %v s, want %v", name, s.Seconds, sec)
		}
		if s.Status != result.StepDone {
			t.Errorf("%s: status %s", name, s.Status)
		}
	}
	if s := step(t, pt, StepScheduling); s.Precision != result.PrecisionSecond || !strings.Contains(s.Source, "Event Scheduled") {
		t.Errorf("scheduling: precision %s source %q (the end is the event's µs, the start whole seconds)", s.Precision, s.Source)
	}
	if s := step(t, pt, StepEndpoints); !s.UpperBound || !strings.Contains(s.Note, "no time per endpoint") {
		t.Errorf("endpoints: %+v", s)
	}
	if s := step(t, pt, "pull:shop/setup:1"); s.Within != "init:setup" || s.Seconds != 0 || !strings.Contains(s.Note, "already present") {
		t.Errorf("init pull: %+v", s)
	}
	if pt.Seconds != 17 || !pt.Ready {
		t.Errorf("pod: %v s ready %v", pt.Seconds, pt.Ready)
	}
	if len(x.Verdicts) < 2 {
		t.Fatalf("verdicts: %+v", x.Verdicts)
	}
	v := x.Verdicts[0]
	if v.ID != IDProbe || !strings.Contains(v.Summary, "initialDelaySeconds 10") || !strings.Contains(v.Title, "initial delay") {
		t.Errorf("first verdict: %s %q %q", v.ID, v.Title, v.Summary)
	}
	if v := x.Verdicts[1]; v.ID != IDInit || !strings.Contains(v.Summary, "ran 5 s") || !strings.Contains(v.Summary, "CPU-limited to 0.1 cores") {
		t.Errorf("second verdict: %s %q", v.ID, v.Summary)
	}
}

// TestSerializedPull: a pull that waited 20 s behind another and pulled for 2 s names serialized pulls.
func TestSerializedPull(t *testing.T) {
	p := buildPod(podSpec{name: "api-0", node: "node-b", scheduled: 0, sandbox: 2, started: 25, ready: 25})
	evs := []corev1.Event{
		kubeletEvent(&p, "pg", "Pulling", "Normal", "spec.containers{app}", `Pulling image "shop/app:1"`, 2, 2, 1),
		kubeletEvent(&p, "pd", "Pulled", "Normal", "spec.containers{app}",
			`Successfully pulled image "shop/app:1" in 2s (22s including waiting). Image size: 50000000 bytes.`, 24, 24, 1),
	}
	x := Explain(Input{Target: ptarget("api-0"), Pods: []corev1.Pod{p}, Events: evs, Now: at(300)})
	valid(t, x)
	s := step(t, x.Pods[0], "pull:shop/app:1")
	if s.Within != StepStart || s.Seconds != 22 || s.Values["waiting_seconds"] != 20 || s.Values["pull_seconds"] != 2 ||
		s.Values["bytes_per_second"] != 25e6 || s.Precision != result.PrecisionMillisecond || !s.Start.Equal(at(2)) {
		t.Errorf("pull step: %+v", s)
	}
	if len(x.Verdicts) == 0 || x.Verdicts[0].ID != IDPullSerial {
		t.Fatalf("verdicts: %+v", x.Verdicts)
	}
	v := x.Verdicts[0]
	if !strings.Contains(v.Summary, "waited 20 s") || !strings.Contains(v.Remediation, "maxParallelImagePulls") || v.Severity != result.SeverityWarning {
		t.Errorf("verdict: %+v", v)
	}
}

// TestSlowRegistry: a 20 MB image pulled in 10 s (2 MB/s), not waiting: a slow registry.
func TestSlowRegistry(t *testing.T) {
	p := buildPod(podSpec{name: "api-1", node: "node-b", scheduled: 0, sandbox: 1, started: 12, ready: 12})
	evs := []corev1.Event{kubeletEvent(&p, "pd", "Pulled", "Normal", "spec.containers{app}",
		`Successfully pulled image "shop/app:1" in 10s (10.2s including waiting). Image size: 20000000 bytes.`, 11, 11, 1)}
	x := Explain(Input{Target: ptarget("api-1"), Pods: []corev1.Pod{p}, Events: evs, Now: at(300)})
	valid(t, x)
	if len(x.Verdicts) == 0 || x.Verdicts[0].ID != IDPullSlow || !strings.Contains(x.Verdicts[0].Summary, "1.9 MiB/s") {
		t.Fatalf("verdicts: %+v", x.Verdicts)
	}
}

// TestFailedScheduling: 30 s without a node, three FailedScheduling attempts (a series, µs times).
func TestFailedScheduling(t *testing.T) {
	p := buildPod(podSpec{name: "batch-0", node: "node-c", scheduled: 30, sandbox: 31, started: 32, ready: 32})
	msg := "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
	evs := []corev1.Event{
		schedulerEvent(&p, "fs", "FailedScheduling", "Warning", msg, 0.010203, 20.5, 3),
		schedulerEvent(&p, "s", "Scheduled", "Normal", "Successfully assigned shop/batch-0 to node-c", 30.25, 30.25, 1),
	}
	x := Explain(Input{Target: ptarget("batch-0"), Pods: []corev1.Pod{p}, Events: evs, Now: at(300)})
	valid(t, x)
	s := step(t, x.Pods[0], StepScheduling)
	if s.Seconds != 30.25 || s.Details["reason"] != "Insufficient cpu" || len(s.Events) != 1 || s.Events[0].Count != 3 || s.Events[0].Precision != result.PrecisionMicrosecond {
		t.Errorf("scheduling: %+v", s)
	}
	v := x.Verdicts[0]
	if v.ID != IDScheduling || !strings.Contains(v.Title, "Insufficient cpu") || !strings.Contains(v.Summary, "preemption could not help") ||
		!strings.Contains(v.Remediation, "requests") {
		t.Errorf("verdict: %+v", v)
	}
}

// TestSandboxIPAM: the CNI's IPAM failed twice before the sandbox came up.
func TestSandboxIPAM(t *testing.T) {
	p := buildPod(podSpec{name: "w-0", node: "node-a", scheduled: 0, sandbox: 14, started: 15, ready: 15})
	evs := []corev1.Event{kubeletEvent(&p, "fc", "FailedCreatePodSandBox", "Warning", "",
		`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "abc": plugin type="calico" failed (add): failed to request IPv4 addresses: IPAM: no IP addresses available in range set`, 1, 8, 2)}
	x := Explain(Input{Target: ptarget("w-0"), Pods: []corev1.Pod{p}, Events: evs, Now: at(300)})
	valid(t, x)
	if v := x.Verdicts[0]; v.ID != IDSandbox || !strings.Contains(v.Title, "IPAM") || !strings.Contains(v.Remediation, "IPAM") {
		t.Errorf("verdict: %+v", v)
	}
}

// TestOOMRestarts: a container OOM-killed twice before it ran.
func TestOOMRestarts(t *testing.T) {
	p := buildPod(podSpec{name: "j-0", node: "node-a", scheduled: 0, sandbox: 1, started: 40, ready: 41, restarts: 2, lastReason: "OOMKilled"})
	evs := []corev1.Event{kubeletEvent(&p, "bo", "BackOff", "Warning", "spec.containers{app}", "Back-off restarting failed container app in pod j-0", 5, 30, 2)}
	x := Explain(Input{Target: ptarget("j-0"), Pods: []corev1.Pod{p}, Events: evs, Now: at(300)})
	valid(t, x)
	if v := x.Verdicts[0]; v.ID != IDOOM || !strings.Contains(v.Summary, "app") || v.Evidence[0].Value != 2 {
		t.Errorf("verdict: %+v", v)
	}
}

// TestEventsForbidden: without Events the timeline still comes from the conditions, and says so.
func TestEventsForbidden(t *testing.T) {
	in := initProbePod()
	in.Events, in.EventsErr = nil, errors.New("forbidden: cannot list events in namespace shop")
	x := Explain(in)
	valid(t, x)
	pt := x.Pods[0]
	if pt.Events.Readable || len(pt.Events.FromConditionsOnly) == 0 || step(t, pt, StepReadiness).Seconds != 10 {
		t.Errorf("pod: %+v", pt)
	}
	if len(x.OutOfReach) == 0 || x.OutOfReach[0].Source != "events" {
		t.Errorf("out of reach: %+v", x.OutOfReach)
	}
}

// TestEventsExpired: a pod three hours old with no Event left, and one whose only Event left is late.
func TestEventsExpired(t *testing.T) {
	in := initProbePod()
	in.Events, in.Now = nil, at(3*3600)
	x := Explain(in)
	valid(t, x)
	c := x.Pods[0].Events
	if c.LostSeconds != 17 || len(c.FromConditionsOnly) < 5 || !strings.Contains(c.Note, "no Event left") {
		t.Errorf("coverage: %+v", c)
	}
	in = initProbePod()
	p := &in.Pods[0]
	in.Events, in.Now = []corev1.Event{kubeletEvent(p, "u", "Unhealthy", "Warning", "spec.containers{app}", "Readiness probe failed: connection refused", 12, 12, 1)}, at(3*3600)
	c = Explain(in).Pods[0].Events
	if c.LostSeconds != 12 || !strings.Contains(c.Note, "12s after the pod's creation") {
		t.Errorf("coverage: %+v", c)
	}
	// A young pod loses nothing.
	if c := Explain(initProbePod()).Pods[0].Events; c.LostSeconds != 0 || c.Note != "" || c.Count != 3 {
		t.Errorf("young pod: %+v", c)
	}
}

// TestPending: a pod still waiting for its image: the start step is pending, timed to when it was read.
func TestPending(t *testing.T) {
	p := buildPod(podSpec{name: "p-0", node: "node-a", scheduled: 0, sandbox: 1, started: -1, ready: -1})
	evs := []corev1.Event{kubeletEvent(&p, "pg", "Pulling", "Normal", "spec.containers{app}", `Pulling image "shop/app:1"`, 1, 1, 1)}
	x := Explain(Input{Target: ptarget("p-0"), Pods: []corev1.Pod{p}, Events: evs, Now: at(61)})
	valid(t, x)
	if s := step(t, x.Pods[0], StepStart); s.Status != result.StepPending || s.Seconds != 60 || s.Details["waiting_reason:app"] != "ContainerCreating" {
		t.Errorf("start: %+v", s)
	}
	if s := step(t, x.Pods[0], "pull:shop/app:1"); s.Status != result.StepPending {
		t.Errorf("pull: %+v", s)
	}
	if v := x.Verdicts[0]; v.ID != IDPhase || !strings.Contains(v.Summary, "has not finished") {
		t.Errorf("verdict: %+v", v)
	}
}

// TestDNSNotMeasured: a pod with a hostname and subdomain behind a headless Service: the DNS step says it is
// not measured and where it is.
func TestDNSNotMeasured(t *testing.T) {
	in := initProbePod()
	in.Pods[0].Spec.Hostname, in.Pods[0].Spec.Subdomain = "web-0", "peers"
	in.Network.Services = append(in.Network.Services, service("peers", map[string]string{"app": "web"}, true))
	x := Explain(in)
	valid(t, x)
	s := step(t, x.Pods[0], StepDNS)
	if s.Status != result.StepNotMeasured || !strings.Contains(s.Note, "kubeslow bench job") || s.Details["name"] != "web-0.peers.shop.svc" {
		t.Errorf("dns: %+v", s)
	}
	if e := step(t, x.Pods[0], StepEndpoints); e.Details["other_services"] != "web" || e.Details["service"] != "peers" {
		// peers sorts first; web is the other.
		t.Errorf("endpoints: %+v", e)
	}
}

// TestEndpointNotReady: an endpoint marked not ready in the slice is pending.
func TestEndpointNotReady(t *testing.T) {
	in := initProbePod()
	in.Network.Slices[0].Endpoints[0].Conditions.Ready = boolp(false)
	if s := step(t, Explain(in).Pods[0], StepEndpoints); s.Status != result.StepPending {
		t.Errorf("endpoints: %+v", s)
	}
	in.Network.Slices = []discoveryv1.EndpointSlice{}
	if s := step(t, Explain(in).Pods[0], StepEndpoints); s.Status != result.StepPending || !strings.Contains(s.Note, "none of web") {
		t.Errorf("endpoints: %+v", s)
	}
}

// TestGoldenText: the text of the init-and-probe pod and of a Deployment of three pods with one slow node.
func TestGoldenText(t *testing.T) {
	for name, x := range map[string]*result.Explanation{"pod.txt": Explain(initProbePod()), "deployment.txt": Explain(deploymentInput(t, false))} {
		var buf bytes.Buffer
		if err := WriteText(&buf, x); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./internal/explain -update writes it)", err)
		}
		if got := buf.String(); got != string(want) {
			t.Errorf("%s differs from the golden file (go test ./internal/explain -update rewrites it):\n%s", name, got)
		}
	}
}

func TestKindsAndRefs(t *testing.T) {
	for in, want := range map[string]string{"po": KindPod, "Deployments": KindDeployment, "sts": KindStatefulSet, "ds": KindDaemonSet, "jobs": KindJob} {
		if k, err := ParseKind(in); err != nil || k != want {
			t.Errorf("%s: %s %v", in, k, err)
		}
	}
	var ue *UsageError
	if _, err := ParseKind("foo"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "want one of pod, deployment") {
		t.Errorf("foo: %v", err)
	}
	if ns, n, err := ParseRef("web", "team"); err != nil || ns != "team" || n != "web" {
		t.Errorf("web: %s %s %v", ns, n, err)
	}
	for _, bad := range []string{"a/b/c", "/x", "x/", ""} {
		if _, _, err := ParseRef(bad, "default"); !errors.As(err, &ue) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	_ = time.Second
}

// TestCrashLoop: restarts without OOM, with the kubelet's back-off Events.
func TestCrashLoop(t *testing.T) {
	p := buildPod(podSpec{name: "c-0", node: "node-a", scheduled: 0, sandbox: 1, started: 50, ready: 50, restarts: 3, lastReason: "Error"})
	evs := []corev1.Event{kubeletEvent(&p, "bo", "BackOff", "Warning", "spec.containers{app}", "Back-off restarting failed container app in pod c-0", 5, 40, 3)}
	x := Explain(Input{Target: ptarget("c-0"), Pods: []corev1.Pod{p}, Events: evs, Now: at(300)})
	valid(t, x)
	if v := x.Verdicts[0]; v.ID != IDCrashLoop || v.Evidence[0].Value != 3 || v.Evidence[1].Value != 3 {
		t.Errorf("verdict: %+v", v)
	}
	if s := step(t, x.Pods[0], StepStart); s.Details["last_state_reason:app"] != "Error" || s.Values["restarts"] != 3 {
		t.Errorf("start: %+v", s)
	}
}

// TestProbeFailures: readiness held by three failures of a 5 s probe with no initial delay.
func TestProbeFailures(t *testing.T) {
	p := buildPod(podSpec{name: "r-0", node: "node-a", scheduled: 0, sandbox: 1, started: 2, ready: 18, readinessDelay: 1, readinessPeriod: 5})
	evs := []corev1.Event{kubeletEvent(&p, "u", "Unhealthy", "Warning", "spec.containers{app}", "Readiness probe failed: HTTP probe failed with statuscode: 503", 3, 13, 3)}
	x := Explain(Input{Target: ptarget("r-0"), Pods: []corev1.Pod{p}, Events: evs, Now: at(300)})
	valid(t, x)
	v := x.Verdicts[0]
	if v.ID != IDProbe || !strings.Contains(v.Title, "failed until") || !strings.Contains(v.Summary, "3 failure(s)") {
		t.Errorf("verdict: %+v", v)
	}
	if s := step(t, x.Pods[0], StepReadiness); s.Values["probe_failures"] != 3 || s.Values["probe_expected_seconds"] != 16 || len(s.Events) != 1 {
		t.Errorf("readiness: %+v", s)
	}
}

// TestNoPodReadyToStartContainers: a node without the condition (kwok, kubelet < 1.29): the sandbox step is
// unknown and its time is in the start step.
func TestNoPodReadyToStartContainers(t *testing.T) {
	p := buildPod(podSpec{name: "k-0", node: "kwok-1", scheduled: 0, sandbox: 1, started: 4, ready: 4})
	var conds []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodReadyToStartContainers {
			conds = append(conds, c)
		}
	}
	p.Status.Conditions = conds
	x := Explain(Input{Target: ptarget("k-0"), Pods: []corev1.Pod{p}, Now: at(300)})
	valid(t, x)
	if s := step(t, x.Pods[0], StepSandbox); s.Status != result.StepUnknown {
		t.Errorf("sandbox: %+v", s)
	}
	if s := step(t, x.Pods[0], StepStart); s.Seconds != 4 {
		t.Errorf("start: %+v", s)
	}
}

// caseAJob is an Indexed Job's four members behind the headless Service job-a (case A): the lead runs (and
// is Ready) at 2 s, the others, created once it ran, are Ready at 8, 8 and 9 s; the slice was last written at
// sliceAt.
func caseAJob(sliceAt float64) Input {
	sel := map[string]string{"job": "job-a"}
	var pods []corev1.Pod
	for i, r := range []float64{2, 8, 8, 9} {
		p := buildPod(podSpec{name: fmt.Sprintf("job-a-%d-x", i), node: "node-a", scheduled: r - 2, sandbox: r - 1, started: r, ready: r, labels: sel})
		p.Spec.Hostname, p.Spec.Subdomain = fmt.Sprintf("job-a-%d", i), "job-a"
		pods = append(pods, p)
	}
	ptrs := []*corev1.Pod{&pods[0], &pods[1], &pods[2], &pods[3]}
	return Input{Target: result.ExplainTarget{Kind: KindJob, Namespace: "shop", Name: "job-a", Selection: "the Job's pods"}, Pods: pods, Now: at(600),
		Network: Network{Services: []corev1.Service{service("job-a", sel, true)}, Slices: []discoveryv1.EndpointSlice{slice("job-a", sliceAt, ptrs...)}}}
}

// TestDNSCaseA: the members created after the lead ran have names its lookups could only miss: one
// KS-EXPLAIN-DNS verdict over the three, first, the worst the last to become Ready (7 s after the lead
// started); the lead's own name existed before any peer ran. The dns steps stay not-measured, with the
// inferred figures as values.
func TestDNSCaseA(t *testing.T) {
	x := Explain(caseAJob(10))
	valid(t, x)
	if len(x.Verdicts) == 0 || x.Verdicts[0].ID != IDDNS {
		t.Fatalf("verdicts %+v: want %s first", x.Verdicts, IDDNS)
	}
	v := x.Verdicts[0]
	if v.ItemCount != 3 || !strings.Contains(v.Summary, "on 3 of 4 pods; the slowest: job-a-3-x (job-a-3.job-a.shop.svc): peer job-a-0-x had been running 7 s") ||
		strings.Contains(v.Summary, "EndpointSlice at most") {
		t.Errorf("verdict: %+v", v)
	}
	for _, it := range v.Items {
		if it.Key == "pod=job-a-0-x" {
			t.Errorf("the lead's name existed before its peers ran: %+v", it)
		}
	}
	byName := map[string]result.PodTimeline{}
	for _, pt := range x.Pods {
		byName[pt.Name] = pt
	}
	lead, last, mid := step(t, byName["job-a-0-x"], StepDNS), step(t, byName["job-a-3-x"], StepDNS), step(t, byName["job-a-1-x"], StepDNS)
	if lead.Status != result.StepNotMeasured || lead.Values["peer_running_before_ready_seconds"] != 0 || lead.Details["earliest_peer"] != "job-a-1-x" {
		t.Errorf("lead's dns: %+v", lead)
	}
	if _, ok := lead.Values["ready_to_endpointslice_seconds"]; ok || !strings.Contains(lead.Note, "a peer became Ready later") {
		t.Errorf("lead's dns: the slice's write may be a later peer's, not its publication: %+v", lead)
	}
	if last.Values["peer_running_before_ready_seconds"] != 7 || last.Values["ready_to_endpointslice_seconds"] != 1 || !strings.HasPrefix(last.Note, "inferred") {
		t.Errorf("last member's dns: %+v", last)
	}
	if mid.Values["peer_running_before_ready_seconds"] != 6 || mid.Details["earliest_peer"] != "job-a-0-x" {
		t.Errorf("member 1's dns: %+v", mid)
	}
}

// TestDNSCaseALatePublication: the EndpointSlice written 15 s after the last member was Ready (a batched
// endpoint controller): the last member's window counts it and the verdict says so.
func TestDNSCaseALatePublication(t *testing.T) {
	x := Explain(caseAJob(24))
	if len(x.Verdicts) == 0 || x.Verdicts[0].ID != IDDNS || !strings.Contains(x.Verdicts[0].Summary, "the slowest: job-a-3-x") ||
		!strings.Contains(x.Verdicts[0].Summary, "EndpointSlice at most 15 s after the pod was Ready") {
		t.Fatalf("verdicts %+v", x.Verdicts)
	}
	if e := x.Verdicts[0].Evidence[0]; e.Name != "dns_exposure_seconds" || e.Value != 22 {
		t.Errorf("evidence %+v: want the window 7 + 15 s", e)
	}
}

// TestDNSAlonePromptSlice: one pod, no peer, its name published 1 s after Ready: nothing to say about DNS.
func TestDNSAlonePromptSlice(t *testing.T) {
	in := caseAJob(10)
	in.Pods = in.Pods[3:]
	in.Target = ptarget("job-a-3-x")
	for _, v := range Explain(in).Verdicts {
		if v.ID == IDDNS {
			t.Errorf("a lone pod published 1 s after Ready: %+v", v)
		}
	}
}

// TestWaterfall: a rollout's HTML draws its pods on one time axis, one row each in order of creation, each
// phase a bar from its start (relative to the first creation) for its seconds; one pod has no waterfall.
func TestWaterfall(t *testing.T) {
	x := Explain(deploymentInput(t, false))
	w := waterfallOf(x.Pods)
	if w == nil || len(w.Rows) != len(x.Pods) {
		t.Fatalf("waterfall %+v of %d pods", w, len(x.Pods))
	}
	byCreation := append([]result.PodTimeline(nil), x.Pods...)
	sort.SliceStable(byCreation, func(i, j int) bool { return byCreation[i].Created.Before(byCreation[j].Created) })
	first := byCreation[0].Created
	span := 0.0
	for _, p := range byCreation {
		span = math.Max(span, p.Created.Sub(first).Seconds()+p.Seconds)
	}
	for i, r := range w.Rows {
		p := byCreation[i]
		if !strings.HasPrefix(r.Label, p.Name+" ") || len(r.Bars) == 0 {
			t.Errorf("row %d: %q with %d bars, want %s", i, r.Label, len(r.Bars), p.Name)
			continue
		}
		for _, b := range r.Bars {
			var s result.Step
			for _, st := range p.Steps {
				if st.Name == b.Name && st.Within == "" {
					s = st
				}
			}
			wantX := int(float64(chartWidth) * s.Start.Sub(first).Seconds() / span)
			if b.X != wantX || b.W != max(1, int(float64(chartWidth)*s.Seconds/span)) || !strings.HasPrefix(b.Class, "ph-") {
				t.Errorf("%s %s: bar x %d w %d class %s, want x %d for %s s from %s", p.Name, b.Name, b.X, b.W, b.Class, wantX, result.FormatValue(s.Seconds), s.Start)
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, x); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `aria-label="waterfall of the pods"`) {
		t.Error("the page has no waterfall")
	}
	if waterfallOf(x.Pods[:1]) != nil {
		t.Error("a waterfall of one pod")
	}
}

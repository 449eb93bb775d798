package scenario_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/bench/churn"
	"github.com/kubeslow/kubeslow/internal/bench/diskagent"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationDiskThrottle is case C by a second mechanism, and the node side through the agent: on one
// lab, with lab-node-1's disk on a loop device (shared with TestIntegrationBurstCredits, next: the same
// configuration, the disk left unthrottled),
//  1. etcd's recipe runs on the node's directory in an agent pod (`bench disk --node`);
//  2. a healthy churn, its disk sampled by an agent pod on the node, raises nothing;
//  3. a churn during which a timer throttles the disk to 50 IOPS (blk-throttle, what io.max sets; no credit
//     model) finds the change point within 10% of the moment, in starts, and KS-CHURN-DISK-KNEE names the
//     node.
//
// A churn on the disk still throttled afterwards (a steady slow disk) is not asserted: in the 50 IOPS runs
// it raised nothing (docs/disk.md). 3 samples in-process, from the blkio root cgroup: cgroup v1 throttles
// each cgroup on its own budget, so the agent pod's probe (its own cgroup, 50 IOPS for a few I/Os a second) did not see the throttle that
// held the runtime to 50 IOPS (measured: probe p99 57 ms before, 5 ms after, while start p50 rose from
// 0.27 s to 6.5 s and the device's IOPS fell from 848 to 61); a real device's throttle is shared by all.
func TestIntegrationDiskThrottle(t *testing.T) {
	sc, err := scenario.Get("disk-throttle")
	if err != nil {
		t.Fatal(err)
	}
	sc.Start = nil // the test runs the timer itself, at a moment of its churn, and lifts it before its end
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	d, rc := upScenario(t, diskLab(t), sc)
	c := kubernetes.NewForConfigOrDie(rc)
	node, dir, dev := lab.RealNodeName(1), lab.RealNodeDir(d, 1), lab.NodeDiskDevice(d)
	if dev == "" {
		t.Fatal("lab-node-1 has no loop device")
	}

	// 1. etcd's recipe on the node, through an agent pod (a small size: the figure is the pod's round trip).
	bench := &diskagent.Bench{Node: node, Dir: dir, Image: lab.AgentImage, Recipe: diskprobe.Recipe{Size: 1 << 20, BlockSize: diskprobe.EtcdRecipe.BlockSize}, Timeout: 3 * time.Minute}
	rep := runIn(ctx, t, c, rc, d, "bench", bench, disk.Rules())
	res := rep.Result(disk.BenchName)
	if res == nil || !res.Status.Measured() {
		t.Fatalf("bench disk --node not measured: %+v", res)
	}
	writes := res.Metric("writes", nil)
	p99 := res.Metric(disk.MetricFdatasyncP99, nil)
	if writes == nil || p99 == nil || int(writes.Value) != (1<<20)/diskprobe.EtcdRecipe.BlockSize || p99.Value <= 0 || p99.Labels["node"] != node {
		t.Fatalf("bench disk on %s: %+v", node, res.Metrics)
	}
	t.Logf("bench disk on %s:%s through the agent: %.0f writes, fdatasync p99 %s", node, dir, writes.Value, churn.Secs(p99.Value))

	// minSamples: about one a second, fewer on a throttled disk (each probe's write+fdatasync waits its turn).
	// th, when set, runs the churn with its throttle's timer around it (the knee's).
	churnOn := func(name string, dur time.Duration, minSamples int, viaAgent bool, th *throttledChurn) *result.Report {
		o := churn.Options{Nodes: []string{node}, Count: 1000, Duration: dur, Concurrency: 1, PodTimeout: 30 * time.Second,
			StopAfterKnee: KneeHold}
		if viaAgent {
			o.AgentImage, o.AgentDirs = lab.AgentImage, map[string]string{node: dir}
		} else {
			o.DiskDirs = map[string]string{node: dir}
		}
		cm := churn.New(o, t.Logf)
		var m measure.Measurement = cm
		if th != nil {
			th.Measurement, m = cm, th
		}
		rep := runIn(ctx, t, c, rc, d, name, m, churn.Rules())
		res := rep.Result(churn.Name)
		if res == nil || !res.Status.Measured() {
			t.Fatalf("%s churn not measured: %+v", name, res)
		}
		for _, f := range rep.Findings {
			t.Logf("%s: finding %s: %s", name, f.ID, f.Summary)
		}
		// The disk was sampled (by the agent pod on the node, or here).
		syncs := seriesPoints(res, "disk_sync_latency")
		if len(syncs) < minSamples {
			t.Fatalf("%s: %d disk samples from the agent in %s, want at least %d (records %+v)", name, len(syncs), dur, minSamples, res.Records)
		}
		for _, s := range res.Series {
			if s.Name == "disk_sync_latency" && s.Labels["device"] != dev[len("/dev/"):] {
				t.Errorf("%s: the agent sampled device %q, want %s", name, s.Labels["device"], dev)
			}
		}
		return rep
	}

	// 2. Healthy: nothing (30 s, ~100 starts; 50 s until 2026-11-29).
	rep = churnOn("healthy", 30*time.Second, 15, true, nil)
	if len(rep.Findings) != 0 {
		t.Errorf("healthy churn raised %d findings", len(rep.Findings))
	}

	// 3. The throttle comes 35 s into the churn (45 s until 2026-11-29; at 30 s the change point, found 5
	// starts early of 100, came near the 10% bound), which stops once KneeHold starts are past the knee, at
	// most 120 s in; it is lifted once the churn has stopped (throttledChurn).
	th := &throttledChurn{dev: dev}
	rep = churnOn("knee", KneeChurn, 37, false, th)
	if th.err != nil {
		t.Errorf("step throttle: %v", th.err)
	}
	evs, err := labtest.ReadCreditEvents(&th.events)
	if err != nil {
		t.Fatal(err)
	}
	var throttled time.Time
	for _, e := range evs {
		if e.Event == "throttled" {
			throttled = e.T
		}
	}
	if throttled.IsZero() {
		t.Fatalf("the throttle never came: %+v", evs)
	}
	checkKnee(t, rep.Result(churn.Name), throttled, "the throttle came")
	if f := finding(rep, "KS-CHURN-DISK-KNEE"); f == nil || f.Items[0].Key != "node="+node {
		t.Errorf("KS-CHURN-DISK-KNEE did not name %s: %+v", node, f)
	}
}

// ThrottleAt is when the test's timer throttles the disk, after the knee churn started: ~100 healthy starts
// before (one every ~0.3 s). KneeChurn bounds the knee churn, which stops sooner once KneeHold throttled
// starts are past the knee: the change point needs 10 of them (stats.ChangeOptions.MinSegment), 4.5-6.5 s
// each until 2026-11-29 (10-15 in the 65 s of a 100 s churn), but under 10 in 65 s on a loaded machine that
// day (the first 13 s: no change point could be placed); 85 s throttled leave room for 10 at 7 s after a
// 15 s one (on a loaded machine, 11 at 7.6-13 s took 80 s).
const (
	ThrottleAt = 35 * time.Second
	KneeChurn  = 120 * time.Second
)

// throttledChurn is the knee churn with the test's step throttle around it: the disk is throttled ThrottleAt
// after the churn starts and lifted once its Run returns (the churn stopped past the knee, KneeHold) or
// liftAfterBound after its Duration, whichever comes first, once the churn has stopped timing starts. What
// the churn does after its bound is timed nowhere: the pod it abandoned at the bound is deleted and the disk
// sample in flight (an fdatasync, up to 33 s at 50 IOPS) completes; on the throttled disk that took 6-14 s of
// the test, lifted it takes a moment.
type throttledChurn struct {
	*churn.Measurement
	dev string
	// events are the throttle's (lab.CreditEvent lines) and err its failure, complete once Run returned.
	events bytes.Buffer
	err    error
}

// liftAfterBound: the churn's bound starts a moment after its Run does (placing its pods and starting its
// pod watch, ~0.1-0.3 s measured); were the lift ever to come first, the start in flight would end fast,
// the last of the series, one point that cannot make a segment of its own (stats.ChangeOptions.MinSegment).
const liftAfterBound = 2 * time.Second

// Run runs the churn with the throttle's timer started beside it, and lifts the throttle before returning.
func (m *throttledChurn) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	thCtx, lift := context.WithTimeout(ctx, m.Opts.Duration+liftAfterBound)
	defer lift()
	done := make(chan error, 1)
	go func() {
		done <- lab.RunStepThrottle(thCtx, m.dev, ThrottleAt, scenario.ThrottleIOPS, 100*time.Millisecond, &m.events)
	}()
	res, err := m.Measurement.Run(ctx, env)
	lift()
	m.err = <-done
	return res, err
}

func runIn(ctx context.Context, t *testing.T, c kubernetes.Interface, rc *rest.Config, d lab.Dirs, name string, m measure.Measurement, rules []rule.Rule) *result.Report {
	t.Helper()
	ns := fmt.Sprintf("kubeslow-test-throttle-%s", name)
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: kube.ObjectMeta(ns, "", name)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := runner.Run(ctx, runner.Options{Client: c, Config: rc, Clock: clock.RealClock{}, RunID: name, Namespace: ns,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Rules: rules, Progress: t.Logf},
		[]measure.Measurement{m})
	// The run's namespace goes, as `kubeslow run`'s does: the lab is shared (labtest.Shared wants no run's
	// namespace left). Its pods are deleted already (each churn pod deleted and waited for, the agent pods
	// deleted when their runs end): the namespace controller finds none of its own to remove on the node.
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting namespace %s: %v", ns, err)
	}
	return rep
}

// diskLab is the lab of the two case C tests, before their scenario's Configure (both put lab-node-1's
// disk on a loop device of the same size): one kwok node and the agent image.
func diskLab(t *testing.T) lab.Config {
	return lab.Config{Nodes: 1, AgentBinary: labtest.Binary(t)}
}

// logKnee logs the churn's numbers around its knee, the rules' evidence (the margins of a run).
func logKnee(t *testing.T, res *result.Result) {
	t.Helper()
	if at := res.Metric(churn.MetricKneeIteration, nil); at != nil {
		starts := seriesPoints(res, "start_latency")
		from, to := max(int(at.Value)-5, 0), min(int(at.Value)+8, len(starts))
		var lat []string
		for _, p := range starts[from:to] {
			lat = append(lat, churn.Secs(p.V))
		}
		t.Logf("knee: starts %d-%d of %d took %s", from, to-1, len(starts), strings.Join(lat, ", "))
	}
	for _, name := range []string{churn.MetricKneeRatio, churn.MetricKneeP50Before, churn.MetricKneeP50After, churn.MetricKneeSyncBefore, churn.MetricKneeSyncAfter,
		churn.MetricKneeSyncRatio, churn.MetricKneePSIBefore, churn.MetricKneePSIAfter, churn.MetricKneeIOPSBefore, churn.MetricKneeIOPSAfter} {
		for _, m := range res.Metrics {
			if m.Name == name {
				t.Logf("knee: %s %v = %.4g %s", name, m.Labels, m.Value, m.Unit)
			}
		}
	}
}

// checkKnee checks that the churn's change point lies within 10% (at least 2 starts) of the true knee, the first
// start sent at or after at, when cause says what came, and logs the numbers around it.
func checkKnee(t *testing.T, res *result.Result, at time.Time, cause string) {
	t.Helper()
	starts := seriesPoints(res, "start_latency")
	trueKnee := -1
	for i, p := range starts {
		if !p.T.Before(at) {
			trueKnee = i
			break
		}
	}
	found := res.Metric(churn.MetricKneeIteration, nil)
	if found == nil || trueKnee < 0 {
		t.Fatalf("no knee found (%s before start %d, %s): %+v", cause, trueKnee, at, res.Metrics)
	}
	t.Logf("knee: found at start %.0f, %s before start %d; %d starts in all", found.Value, cause, trueKnee, len(starts))
	logKnee(t, res)
	if math.Abs(found.Value-float64(trueKnee)) > math.Max(0.1*float64(trueKnee), 2) {
		t.Errorf("knee at start %.0f, true knee %d: more than 10%% off", found.Value, trueKnee)
	}
}

// finding is the report's finding id, or nil.
func finding(rep *result.Report, id string) *result.Finding {
	for i := range rep.Findings {
		if rep.Findings[i].ID == id {
			return &rep.Findings[i]
		}
	}
	return nil
}

// TestIntegrationBurstCredits reproduces case C: pods started one after another on a real node whose runtime
// disk is metered like a gp2 volume. The credit controller logs the moment its bucket ran dry (the real knee);
// the churn benchmark must find the change point of start latency within 10% of that knee, in starts, and
// name the disk. It runs on TestIntegrationDiskThrottle's lab (declared after it, in its file: tests run in
// that order), the credit controller started on it; burst-credits has no Stop, so no test runs after it on
// that lab (labtest.Spend).
func TestIntegrationBurstCredits(t *testing.T) {
	sc, err := scenario.Get("burst-credits")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	d, rc := upScenario(t, diskLab(t), sc)
	c := kubernetes.NewForConfigOrDie(rc)
	ns := "kubeslow-test-credits"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: kube.ObjectMeta(ns, "", "test")}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := lab.RealNodeName(1)
	m := churn.New(churn.Options{Nodes: []string{node}, Count: CreditsRunCount, Duration: CreditsRunDuration, Concurrency: 1,
		PodTimeout: 30 * time.Second, StopAfterKnee: KneeHold, DiskDirs: map[string]string{node: lab.RealNodeDir(d, 1)}}, t.Logf)
	rep := runner.Run(ctx, runner.Options{Client: c, Config: rc, Clock: clock.RealClock{}, RunID: "test", Namespace: ns,
		Log:   slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Rules: churn.Rules(), Progress: t.Logf}, []measure.Measurement{m})

	// The real knee, from the controller's own log.
	f, err := os.Open(labtest.CreditLog(d))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := labtest.ReadCreditEvents(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var exhausted time.Time
	for _, e := range evs {
		t.Logf("credit event %s at %s: %d I/Os, %.0f credits, limit %.0f IOPS", e.Event, e.T.Format(time.RFC3339Nano), e.IOs, e.Credits, e.Limit)
		if e.Event == "exhausted" && exhausted.IsZero() {
			exhausted = e.T
		}
	}
	res := rep.Result(churn.Name)
	if res == nil || !res.Status.Measured() {
		t.Fatalf("churn not measured: %+v", res)
	}
	if exhausted.IsZero() {
		t.Fatalf("the credit bucket never ran dry in %d starts: the scenario's scale is off", len(seriesPoints(res, "start_latency")))
	}
	checkKnee(t, res, exhausted, "the bucket ran dry")
	for _, f := range rep.Findings {
		t.Logf("finding %s: %s", f.ID, f.Summary)
	}
	fired := finding(rep, "KS-CHURN-DISK-KNEE")
	if fired == nil {
		t.Fatalf("the disk was not named (findings %+v)", rep.Findings)
	}
	if fired.Items[0].Key != "node="+node {
		t.Errorf("finding names %q, want %s", fired.Items[0].Key, node)
	}
}

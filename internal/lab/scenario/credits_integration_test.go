package scenario_test

import (
	"context"
	"log/slog"
	"math"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/bench/churn"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationBurstCredits reproduces case C: pods started one after another on a real node whose runtime
// disk is metered like a gp2 volume. The credit controller logs the moment its bucket ran dry (the real knee);
// the churn benchmark must find the change point of start latency within 10% of that knee, in starts, and
// name the disk.
func TestIntegrationBurstCredits(t *testing.T) {
	sc, err := scenario.Get("burst-credits")
	if err != nil {
		t.Fatal(err)
	}
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	rc, down := labtest.Up(t, d, func() error {
		_, err := scenario.Up(ctx, d, lab.Config{Nodes: 1, AgentBinary: labtest.Binary(t)}, sc, t.Logf)
		return err
	})
	defer down()
	c := kubernetes.NewForConfigOrDie(rc)
	ns := "kubeslow-test-credits"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: kube.ObjectMeta(ns, "", "test")}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := lab.RealNodeName(1)
	m := churn.New(churn.Options{Nodes: []string{node}, Count: CreditsRunCount, Duration: CreditsRunDuration, Concurrency: 1,
		PodTimeout: 30 * time.Second, StopAfterKnee: churn.DefaultStopAfterKnee, DiskDirs: map[string]string{node: lab.RealNodeDir(d, 1)}}, t.Logf)
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
	// The true knee in starts: the first start sent after the bucket ran dry.
	starts := seriesPoints(res, "start_latency")
	trueKnee := -1
	for i, p := range starts {
		if !p.T.Before(exhausted) {
			trueKnee = i
			break
		}
	}
	found := res.Metric(churn.MetricKneeIteration, nil)
	if found == nil || trueKnee < 0 {
		t.Fatalf("no knee found (true knee at start %d, %s): %+v", trueKnee, exhausted, res.Metrics)
	}
	t.Logf("knee: found at start %.0f, the bucket ran dry before start %d", found.Value, trueKnee)
	if math.Abs(found.Value-float64(trueKnee)) > math.Max(0.1*float64(trueKnee), 2) {
		t.Errorf("knee at start %.0f, true knee %d: more than 10%% off", found.Value, trueKnee)
	}
	var fired *result.Finding
	for i, f := range rep.Findings {
		t.Logf("finding %s: %s", f.ID, f.Summary)
		if f.ID == "KS-CHURN-DISK-KNEE" {
			fired = &rep.Findings[i]
		}
	}
	if fired == nil {
		t.Fatalf("the disk was not named (findings %+v)", rep.Findings)
	}
	if fired.Items[0].Key != "node="+node {
		t.Errorf("finding names %q, want %s", fired.Items[0].Key, node)
	}
}

// The run's bounds: the bucket runs dry after ~110 starts at ~0.3 s each, and the change point needs 20 slow
// starts after it (churn.DefaultStopAfterKnee, where the churn stops), ~5 s each.
const (
	CreditsRunCount    = 400
	CreditsRunDuration = 4 * time.Minute
)

func seriesPoints(r *result.Result, name string) []result.Point {
	for _, s := range r.Series {
		if s.Name == name {
			return s.Points
		}
	}
	return nil
}

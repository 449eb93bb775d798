package nodeagent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// TestKeptAgent: with the run's NodeAgent the measurement is the read-only KeptSpec (a read-only run and the
// watch keep it); the kept DaemonSet reads every minute, a quarter of a run's probe, with the given labels.
func TestKeptAgent(t *testing.T) {
	m := New(RunOptions(measure.Options{NodeAgent: "kubeslow", Window: 20 * time.Second}))
	if m.Opts.Kept != "kubeslow" || measure.KindOf(m) != measure.ReadOnly || len(measure.ReadOnlyOf([]measure.Measurement{m})) != 1 {
		t.Errorf("kept: %+v kind %v", m.Opts, measure.KindOf(m))
	}
	if run := New(RunOptions(measure.Options{Image: "img"})); measure.KindOf(run) != measure.Benchmark {
		t.Errorf("a run's own agents: kind %v, want benchmark (it creates a DaemonSet)", measure.KindOf(run))
	}
	if d := KeptDaemonSet("kubeslow", "img", nil, 15*time.Second); keptEvery(d) != 15*time.Second {
		t.Errorf("every 15s: %s", keptEvery(d))
	}
	ds := KeptDaemonSet("kubeslow", "img", map[string]string{"a": "b"}, 0)
	if ds.Name != KeptName || ds.Namespace != "kubeslow" || ds.Labels["a"] != "b" || ds.Spec.Selector.MatchLabels["a"] != "b" || keptEvery(ds) != KeptEvery {
		t.Errorf("kept DaemonSet %+v, every %s", ds.ObjectMeta, keptEvery(ds))
	}
	args := strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--probe-bytes 262144") || !strings.Contains(args, "--window 1m0s") || !strings.Contains(args, "--ready-file /ready") {
		t.Errorf("args %s", args)
	}
	if keptEvery(New(DefaultOptions("img")).DaemonSet("ns", "r1")) != 0 {
		t.Error("a run's DaemonSet read as kept")
	}
}

// TestKeptNewestReport: the newest report line of a kept agent's log is read (its warnings share the log), and
// one older than two reads and the slack is stale, with its age.
func TestKeptNewestReport(t *testing.T) {
	log := `{"node":"n1","net":{},"at":"2026-11-29T06:00:00Z"}
time=2026-11-29T06:00:30Z level=WARN msg="ring buffer"
{"node":"n1","net":{},"at":"2026-11-29T06:01:00Z"}
time=2026-11-29T06:01:30Z level=WARN msg="ring buffer"
`
	h, err := agentproto.NodeHost{}.DecodeLast([]byte(log))
	if err != nil || h.At != time.Date(2026, 11, 29, 6, 1, 0, 0, time.UTC) {
		t.Fatalf("newest: %+v %v", h, err)
	}
	if first, _ := (agentproto.NodeHost{}).Decode([]byte(log)); first.At.Minute() != 0 {
		t.Errorf("Decode (a run's one report) read %s", first.At)
	}
	if err := fresh(h.At.Add(2*time.Minute+KeptSlack), time.Minute)(h); err != nil {
		t.Errorf("two reads and the slack old: %v", err)
	}
	if err := fresh(h.At.Add(2*time.Minute+KeptSlack+time.Second), time.Minute)(h); err == nil || !strings.Contains(err.Error(), "2m31s ago") {
		t.Errorf("stale: %v", err)
	}
	h.At = time.Time{}
	if err := fresh(time.Now(), time.Minute)(h); err == nil {
		t.Error("a report without its time taken as fresh")
	}
}

// TestKeptAbsent: no kept DaemonSet in the namespace is a skip that says how to keep one; one that is not a
// kept agent (no --every) is an error.
func TestKeptAbsent(t *testing.T) {
	env := &measure.Env{Client: fake.NewClientset(), Clock: clocktesting.NewFakeClock(time.Now())}
	m := New(RunOptions(measure.Options{NodeAgent: "kubeslow"}))
	_, err := m.keptRead(context.Background(), env)
	var skip *measure.SkipError
	if !asSkip(err, &skip) || !strings.Contains(skip.Reason, "kubeslow watch install --node-agent") {
		t.Errorf("absent: %v", err)
	}
	ds := New(DefaultOptions("img")).DaemonSet("kubeslow", "r1")
	ds.Name, ds.Status = KeptName, appsv1.DaemonSetStatus{DesiredNumberScheduled: 1}
	env.Client = fake.NewClientset(ds)
	if _, err := m.keptRead(context.Background(), env); err == nil || asSkip(err, &skip) || !strings.Contains(err.Error(), "no --every") {
		t.Errorf("not a kept agent: %v", err)
	}
}

func asSkip(err error, skip **measure.SkipError) bool { return errors.As(err, skip) }

package nodes_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func node(name string, ready bool, pressure ...corev1.NodeConditionType) corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: st})
	for _, p := range pressure {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: p, Status: corev1.ConditionTrue})
	}
	return n
}

// notReady is a NodeNotReady Event on node from source, count times, in the core/v1 or the series form.
func notReady(node, source string, count int32, series bool) corev1.Event {
	e := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node}, Reason: nodes.NotReadyReason,
		Source: corev1.EventSource{Component: source}}
	if series {
		e.Series = &corev1.EventSeries{Count: count, LastObservedTime: metav1.NowMicro()}
	} else {
		e.Count = count
	}
	return e
}

func TestAnalyzeAndDiagnose(t *testing.T) {
	cases := []struct {
		name     string
		nodes    []corev1.Node
		events   []corev1.Event
		status   result.Status
		findings []string
	}{
		{"healthy", []corev1.Node{node("a", true), node("b", true)}, nil, result.StatusPass, nil},
		{"empty cluster", nil, nil, result.StatusPass, nil},
		{"one not ready", []corev1.Node{node("a", true), node("b", false)}, nil, result.StatusWarn, []string{"KS-NODE-001"}},
		{"disk pressure", []corev1.Node{node("a", true, corev1.NodeDiskPressure)}, nil, result.StatusWarn, []string{"KS-NODE-002"}},
		{"no conditions yet", []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "new"}}}, nil, result.StatusWarn, []string{"KS-NODE-001"}},
		// The node lifecycle controller's event (lease not renewed within the grace period), aggregated by the
		// recorder into one Event with a count; the node is Ready again.
		{"flapped, controller events", []corev1.Node{node("a", true), node("b", true)},
			[]corev1.Event{notReady("a", "node-controller", 3, false)}, result.StatusWarn, []string{"KS-NODE-FLAP"}},
		// The kubelet's own event (it set Ready=False itself, e.g. PLEG not healthy), as an events.k8s.io series.
		{"flapped, kubelet series", []corev1.Node{node("a", true)},
			[]corev1.Event{notReady("a", "kubelet", 2, true)}, result.StatusWarn, []string{"KS-NODE-FLAP"}},
		// Down once and still down: down, not flapping.
		{"down", []corev1.Node{node("a", true), node("b", false)},
			[]corev1.Event{notReady("b", "node-controller", 1, false)}, result.StatusWarn, []string{"KS-NODE-001"}},
		// Down now after coming back once: both.
		{"flapping and down now", []corev1.Node{node("b", false)},
			[]corev1.Event{notReady("b", "node-controller", 1, false), notReady("b", "kubelet", 1, false)}, result.StatusWarn, []string{"KS-NODE-001", "KS-NODE-FLAP"}},
		// Events about other things and other objects do not count.
		{"other events", []corev1.Node{node("a", true)},
			[]corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "a"}, Reason: "RegisteredNode", Count: 1},
				{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "a"}, Reason: nodes.NotReadyReason, Count: 1}}, result.StatusPass, nil},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := nodes.Analyze(c.nodes, c.events...)
			if res.Status != c.status {
				t.Fatalf("status %s (%s), want %s", res.Status, res.Reason, c.status)
			}
			fs, _ := rule.Evaluate(&result.Report{Results: []result.Result{res}}, check.Rules())
			var ids []string
			for _, f := range fs {
				ids = append(ids, f.ID)
			}
			if strings.Join(ids, ",") != strings.Join(c.findings, ",") {
				t.Fatalf("findings %v, want %v", ids, c.findings)
			}
			rep := result.Report{APIVersion: result.APIVersion, Kind: result.Kind, Results: []result.Result{res}, Findings: fs}
			if err := rep.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
	res := nodes.Analyze([]corev1.Node{node("a", true), node("b", false), node("c", false)})
	if m := res.Metric("nodes_not_ready", nil); m == nil || m.Value != 2 {
		t.Fatalf("nodes_not_ready = %v", m)
	}
	if res.Records[1].Values["ready"] != 0 || res.Records[1].ID != "b" {
		t.Fatalf("records do not name the NotReady node: %+v", res.Records)
	}
	res = nodes.Analyze([]corev1.Node{node("a", true), node("b", false)}, notReady("a", "node-controller", 4, false), notReady("b", "node-controller", 1, false))
	if m := res.Metric("nodes_flapping", nil); m == nil || m.Value != 1 {
		t.Fatalf("nodes_flapping = %v", m)
	}
	if r := res.Records[0]; r.Values["not_ready_transitions"] != 4 || r.Labels["issues"] != "Flapping" {
		t.Fatalf("the flapping node's record: %+v", r)
	}
	if r := res.Records[1]; r.Values["not_ready_transitions"] != 1 || r.Labels["issues"] != "NotReady" {
		t.Fatalf("the down node's record: %+v", r)
	}
}

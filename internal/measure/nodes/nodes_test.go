package nodes_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/check"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
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

func TestAnalyzeAndDiagnose(t *testing.T) {
	cases := []struct {
		name     string
		nodes    []corev1.Node
		status   result.Status
		findings []string
	}{
		{"healthy", []corev1.Node{node("a", true), node("b", true)}, result.StatusPass, nil},
		{"empty cluster", nil, result.StatusPass, nil},
		{"one not ready", []corev1.Node{node("a", true), node("b", false)}, result.StatusWarn, []string{"KS-NODE-001"}},
		{"disk pressure", []corev1.Node{node("a", true, corev1.NodeDiskPressure)}, result.StatusWarn, []string{"KS-NODE-002"}},
		{"no conditions yet", []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "new"}}}, result.StatusWarn, []string{"KS-NODE-001"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := nodes.Analyze(c.nodes)
			if res.Status != c.status {
				t.Fatalf("status %s (%s), want %s", res.Status, res.Reason, c.status)
			}
			fs, _ := check.Evaluate(&result.Report{Results: []result.Result{res}}, check.Rules())
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
}

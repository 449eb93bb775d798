// Package nodestest is nodes.health's analysis of scripted node objects and events: the fixtures of its
// rules.
package nodestest

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Objects are n nodes, the first notReady of them NotReady, the last with condition pressure (if set).
func Objects(n int, notReady int, pressure corev1.NodeConditionType) []corev1.Node {
	var out []corev1.Node
	for i := range n {
		st := corev1.ConditionTrue
		if i < notReady {
			st = corev1.ConditionFalse
		}
		conds := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
		if pressure != "" && i == n-1 {
			conds = append(conds, corev1.NodeCondition{Type: pressure, Status: corev1.ConditionTrue})
		}
		out = append(out, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}, Status: corev1.NodeStatus{Conditions: conds}})
	}
	return out
}

// RuleFixtures are nodes.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	nodeSet := func(n, notReady int, pressure corev1.NodeConditionType, facts map[string]string) func(t *testing.T) *result.Report {
		return func(*testing.T) *result.Report {
			return ruletest.Report(facts, nodes.Analyze(Objects(n, notReady, pressure)))
		}
	}
	// flaps: 5 nodes, the first notReady of them NotReady now, and NodeNotReady Events on n0 (count times).
	flaps := func(notReady int, count int32) func(t *testing.T) *result.Report {
		return func(*testing.T) *result.Report {
			ev := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n0"}, Reason: nodes.NotReadyReason, Count: count}
			return ruletest.Report(nil, nodes.Analyze(Objects(5, notReady, ""), ev))
		}
	}
	return map[string]ruletest.Fixture{
		"KS-NODE-001":    {Fire: nodeSet(5, 2, "", nil), Clear: nodeSet(5, 0, corev1.NodeMemoryPressure, nil)},
		"KS-NODE-002":    {Fire: nodeSet(5, 0, corev1.NodeDiskPressure, nil), Clear: nodeSet(5, 2, "", nil)},
		"KS-NODE-FLAP":   {Fire: flaps(0, 3), Clear: flaps(1, 1)}, // NotReady three times and Ready now; down once and still down
		"KS-ETCD-EVENTS": {Fire: nodeSet(600, 0, "", map[string]string{"events-etcd": "shared"}), Clear: nodeSet(600, 0, "", map[string]string{"events-etcd": "separate"})},
	}
}

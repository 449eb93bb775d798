package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReadyConditions(t *testing.T) {
	node := func(cs ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: cs}}
	}
	pod := func(cs ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: cs}}
	}
	for _, c := range []struct {
		name string
		got  bool
		want bool
	}{
		{"node without conditions", NodeReady(node()), false},
		{"node Ready", NodeReady(node(corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})), true},
		{"node Ready unknown", NodeReady(node(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown})), false},
		{"node pressure only", NodeReady(node(corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue})), false},
		{"pod without conditions", PodReady(pod()), false},
		{"pod Ready", PodReady(pod(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})), true},
		{"pod scheduled, not Ready", PodReady(pod(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})), false},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

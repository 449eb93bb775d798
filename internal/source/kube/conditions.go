package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NodeReady reports whether n's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodReady reports whether p's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodTrueSince is when p's condition t became True (its lastTransitionTime, whole seconds), or the zero time
// when t is not True.
func PodTrueSince(p *corev1.Pod, t corev1.PodConditionType) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			if c.Status == corev1.ConditionTrue {
				return c.LastTransitionTime.Time
			}
			return time.Time{}
		}
	}
	return time.Time{}
}

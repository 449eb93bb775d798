package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ListEvents lists the core/v1 Events in ns ("" for every namespace) that match the field selector, 500 a
// page (an apiserver keeps many: one unpaged LIST of them is what case B's node agents overloaded it with).
func ListEvents(ctx context.Context, c kubernetes.Interface, ns, fieldSelector string) ([]corev1.Event, error) {
	var out []corev1.Event
	opts := metav1.ListOptions{FieldSelector: fieldSelector, Limit: 500}
	for {
		l, err := c.CoreV1().Events(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

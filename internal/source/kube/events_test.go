package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestListEvents(t *testing.T) {
	c := fake.NewClientset(
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "x"}, Reason: "OOMKilling"},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "y"}, Reason: "Pulled"},
	)
	all, err := ListEvents(t.Context(), c, "", "")
	if err != nil || len(all) != 2 {
		t.Fatalf("every namespace: %d events, %v", len(all), err)
	}
	in, err := ListEvents(t.Context(), c, "y", "")
	if err != nil || len(in) != 1 || in[0].Name != "b" {
		t.Fatalf("namespace y: %+v, %v", in, err)
	}
}

package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsSimulated(t *testing.T) {
	for _, c := range []struct {
		ann  map[string]string
		want bool
	}{
		{map[string]string{"kwok.x-k8s.io/node": "fake"}, true},
		{map[string]string{"kwok.x-k8s.io/node": "other"}, false},
		{map[string]string{"type": "kwok"}, false}, // a label-like annotation is not kwok's marker
		{nil, false},
	} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: c.ann}}
		if got := IsSimulated(n); got != c.want {
			t.Errorf("%v: IsSimulated = %v, want %v", c.ann, got, c.want)
		}
	}
}

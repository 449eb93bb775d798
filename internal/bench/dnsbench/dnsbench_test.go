package dnsbench

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeslow/kubeslow/internal/measure"
)

// TestTargets: the Service's address, each running DNS pod's IP (not a pending one), and the endpoints no pod
// backs (the lab's CoreDNS process).
func TestTargets(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "198.19.0.10"}}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "coredns-a"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "198.18.1.2"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "coredns-b"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
	}
	got := Targets(svc, pods, []string{"198.18.0.1"})
	want := []Target{{Addr: "198.19.0.10", Kind: "service"}, {Addr: "198.18.1.2", Kind: "replica", Pod: "coredns-a", Node: "n1"}, {Addr: "198.18.0.1", Kind: "replica"}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := Targets(&corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}, nil, nil); len(got) != 0 {
		t.Fatalf("headless: %+v", got)
	}
}

// TestRunSkips: without an image, or without the DNS Service, the benchmark is skipped with the reason.
func TestRunSkips(t *testing.T) {
	env := &measure.Env{Client: fake.NewClientset(), Namespace: "ns", RunID: "r"}
	var se *measure.SkipError
	if _, err := New(Options{}).Run(context.Background(), env); !errors.As(err, &se) {
		t.Fatalf("no image: %v", err)
	}
	if _, err := New(Options{Image: "x"}).Run(context.Background(), env); !errors.As(err, &se) {
		t.Fatalf("no Service: %v", err)
	}
}

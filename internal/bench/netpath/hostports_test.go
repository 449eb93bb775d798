package netpath

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
)

// TestReleaseHostPorts: the host-network server is deleted with a grace (not 0, which would leave its container
// holding the ports) and waited for until the API says it is gone — here the kubelet takes three reads to stop it
// — while the run's other pods are left to the namespace's deletion.
func TestReleaseHostPorts(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ks-run"}}
	}
	c := fake.NewClientset(pod("srv-host"), pod("cli-pod-a"))
	var grace *int64
	c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if d := a.(k8stesting.DeleteAction); d.GetName() == "srv-host" {
			grace = d.GetDeleteOptions().GracePeriodSeconds
		}
		return true, nil, nil // the object stays until its container has stopped (below)
	})
	var reads atomic.Int32
	c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == "srv-host" && reads.Add(1) > 3 {
			return true, nil, apierrors.NewNotFound(corev1.Resource("pods"), "srv-host")
		}
		return false, nil, nil
	})
	releaseHostPorts(&measure.Env{Client: c, Namespace: "ks-run"}, "srv-host")
	if grace == nil || *grace < 1 {
		t.Errorf("srv-host deleted with grace %v, want at least 1 s", grace)
	}
	if n := reads.Load(); n != 4 {
		t.Errorf("%d reads of srv-host, want 4 (waited until it was gone)", n)
	}
	if _, err := c.CoreV1().Pods("ks-run").Get(context.Background(), "cli-pod-a", metav1.GetOptions{}); err != nil {
		t.Errorf("cli-pod-a: %v (only the named pods are deleted here)", err)
	}
}

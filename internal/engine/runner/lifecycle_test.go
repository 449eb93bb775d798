package runner

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestWaitDefaultServiceAccount: the wait ends when the namespace's default ServiceAccount appears (here on
// the third read, as the controller-manager would make it), at once when it is there, and gives up with the
// reason when kubeslow may not read ServiceAccounts or the ServiceAccount never comes.
func TestWaitDefaultServiceAccount(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ks"}}
	ctx := context.Background()

	t.Run("there", func(t *testing.T) {
		if why := waitDefaultServiceAccount(ctx, fake.NewClientset(sa), "ks", time.Minute, time.Millisecond); why != "" {
			t.Errorf("got %q, want no reason", why)
		}
	})
	t.Run("made on the third read", func(t *testing.T) {
		c := fake.NewClientset()
		var reads atomic.Int32
		c.PrependReactor("get", "serviceaccounts", func(k8stesting.Action) (bool, runtime.Object, error) {
			if reads.Add(1) < 3 {
				return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, "default")
			}
			return true, sa, nil
		})
		if why := waitDefaultServiceAccount(ctx, c, "ks", time.Minute, time.Millisecond); why != "" {
			t.Errorf("got %q, want no reason", why)
		}
		if n := reads.Load(); n != 3 {
			t.Errorf("%d reads, want 3", n)
		}
	})
	t.Run("forbidden", func(t *testing.T) {
		c := fake.NewClientset()
		var reads atomic.Int32
		c.PrependReactor("get", "serviceaccounts", func(k8stesting.Action) (bool, runtime.Object, error) {
			reads.Add(1)
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "default", nil)
		})
		why := waitDefaultServiceAccount(ctx, c, "ks", time.Minute, time.Millisecond)
		if !strings.Contains(why, "not waiting") || !strings.Contains(why, "forbidden") || reads.Load() != 1 {
			t.Errorf("got %q after %d reads, want one read and the reason", why, reads.Load())
		}
	})
	t.Run("never", func(t *testing.T) {
		why := waitDefaultServiceAccount(ctx, fake.NewClientset(), "ks", 20*time.Millisecond, time.Millisecond)
		if !strings.Contains(why, "no default ServiceAccount after 20ms") {
			t.Errorf("got %q, want the wait's end", why)
		}
	})
}

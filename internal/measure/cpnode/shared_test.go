package cpnode

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The run's node tier is started once, by whichever measurement asks first, and shared: a managed cluster
// (no node labelled control-plane) lists the nodes once and every later caller gets the same reason; nothing
// is created.
func TestSharedManaged(t *testing.T) {
	e := env(node("w1", nil), node("w2", nil))
	sh := NewShared(DefaultOptions("img"))
	e.NodeTier = sh
	for i := 0; i < 3; i++ {
		_, err := From(context.Background(), e)
		if u, ok := IsUnreachable(err); !ok || u.Reason != NoControlPlaneNodes || !strings.Contains(u.Detail, "managed control plane") {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	lists, creates := 0, 0
	for _, a := range fakeActions(e) {
		switch a {
		case "list nodes":
			lists++
		case "create pods", "create daemonsets":
			creates++
		}
	}
	if lists != 1 || creates != 0 {
		t.Errorf("%d node lists, %d agent pods or DaemonSets created; want 1 and 0", lists, creates)
	}
	sh.Close(context.Background())
	o := OutOfReach(measure.OutOfReachEtcd, errFrom(e))
	if !strings.Contains(o.Why, measure.WhyEtcdNotGiven) || !strings.Contains(o.Why, "node tier is out of reach") || o.Fix != measure.FixEtcd {
		t.Errorf("out of reach %+v", o)
	}
}

func errFrom(e *measure.Env) error {
	_, err := From(context.Background(), e)
	return err
}

// A start cut short by its caller's context is tried again by the next caller; a start that answered is not.
func TestSharedRetryAfterCancel(t *testing.T) {
	calls := 0
	sh := &Shared{start: func(ctx context.Context, _ *measure.Env, _ Options) (*Session, error) {
		calls++
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Unreachable{Reason: NoImage, Detail: "none"}
	}}
	e := env()
	e.NodeTier = sh
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := From(ctx, e); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled start: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := From(context.Background(), e); err == nil || !strings.Contains(err.Error(), "no agent image") {
			t.Fatalf("start: %v", err)
		}
	}
	if calls != 2 {
		t.Errorf("started %d times, want 2 (the cancelled one and one more)", calls)
	}
}

// No node tier in the run: why (NodeTierOff) is the reason.
func TestFromNone(t *testing.T) {
	e := env()
	e.NodeTierOff = "--read-only: kubeslow deploys no agent"
	_, err := From(context.Background(), e)
	if !strings.Contains(Why(err), "--read-only") {
		t.Errorf("%v", err)
	}
	var _ result.OutOfReach = OutOfReach(measure.OutOfReachAudit, err)
}

// fakeActions are the fake clientset's actions as "verb resource".
func fakeActions(e *measure.Env) []string {
	var out []string
	for _, a := range e.Client.(*fake.Clientset).Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

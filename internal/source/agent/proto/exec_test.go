package agentproto

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// fakeExec answers the i-th exec with outs[i] (the last one repeated) and counts the calls.
func fakeExec(t *testing.T, outs ...string) *int {
	t.Helper()
	n := new(int)
	old := execFn
	execFn = func(_ context.Context, _ *rest.Config, _ kubernetes.Interface, _, _ string, _ ...string) (string, string, error) {
		o := outs[min(*n, len(outs)-1)]
		*n++
		return o, "", nil
	}
	t.Cleanup(func() { execFn = old })
	return n
}

func TestExecRereadsEmptyOutput(t *testing.T) {
	calls := fakeExec(t, "", "\n", `{"netns":"net:[1]","components":[]}`)
	cp, err := Exec(context.Background(), nil, nil, "ns", "pod", ControlPlane{})
	if err != nil {
		t.Fatal(err)
	}
	if *calls != 3 || cp.NetNS != "net:[1]" {
		t.Fatalf("calls %d, report %+v; want the third run's report", *calls, cp)
	}
}

func TestExecGivesUpOnEmptyOutput(t *testing.T) {
	calls := fakeExec(t, "")
	_, err := Exec(context.Background(), nil, nil, "ns", "pod", ControlPlane{})
	if err == nil || !strings.Contains(err.Error(), "no output after 3 attempt(s)") {
		t.Fatalf("err %v; want no output after 3 attempts", err)
	}
	if *calls != execAttempts {
		t.Fatalf("%d calls, want %d", *calls, execAttempts)
	}
}

func TestExecDoesNotRerunLoad(t *testing.T) {
	calls := fakeExec(t, "")
	_, err := Exec(context.Background(), nil, nil, "ns", "pod", BenchHTTP{})
	if err == nil || *calls != 1 {
		t.Fatalf("err %v after %d calls; a load run is not run again", err, *calls)
	}
}

package apiaudit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode/cpnodetest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func event(at time.Time, verb, ua string) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"1","stage":"ResponseComplete","requestURI":"/api/v1/events","verb":%q,"user":{"username":"u"},"userAgent":%q,"objectRef":{"resource":"events","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
		verb, ua, at.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano))
}

// Without --audit-log the log of kube-apiserver's --audit-log-path is streamed by the node agent from its end
// at the window's start, through the parser (an unreadable line counted, not fatal), in chunks smaller than the
// log; the result names the node and the file.
func TestNodeTier(t *testing.T) {
	now := time.Now().Add(-time.Second)
	var b strings.Builder
	for i := 0; i < 50; i++ {
		b.WriteString(event(now, "list", "node-monitor/1.0") + "\n")
	}
	b.WriteString("{not json\n")
	stub := &cpnodetest.Stub{On: []string{"worker", "cp"}, AuditPath: "/var/log/kubernetes/audit/audit.log",
		Audit: map[string][]byte{"cp": []byte(b.String())}}
	env := &measure.Env{Clock: clock.RealClock{}, Log: slog.New(slog.DiscardHandler), NodeTier: stub}
	m := New(time.Millisecond, nil)
	obs, err := m.Start(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	o := obs.(*nodeObservation)
	o.from = now.Add(-time.Minute)
	var lines int64
	_, _, err = stub.ReadAudit(context.Background(), "cp", o.cur, 700, 1<<20, func(b []byte) error {
		if b[len(b)-1] != '\n' {
			t.Errorf("chunk of %d bytes does not end a line", len(b))
		}
		lines += int64(strings.Count(string(b), "\n"))
		return nil
	})
	if err != nil || lines != 51 {
		t.Fatalf("chunks: %d lines, %v", lines, err)
	}
	res, err := obs.Gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Reason, "/var/log/kubernetes/audit/audit.log") || !strings.Contains(res.Reason, "node agent on cp") {
		t.Errorf("reason %q does not name the file and node", res.Reason)
	}
	if res.Metric("audit_source", map[string]string{"source": cpnode.SourceNodeAgent, "node": "cp"}) == nil {
		t.Errorf("no audit_source: %+v", res.Metrics)
	}
	if bad := res.Metric("bad_lines", nil); bad == nil || bad.Value != 1 {
		t.Errorf("bad_lines %+v, want 1", bad)
	}
	found := false
	for _, r := range res.Records {
		found = found || strings.Contains(fmt.Sprint(r), "node-monitor")
	}
	if !found {
		t.Errorf("the LIST client is not in the records: %+v", res.Records)
	}
}

// Audit off on every node: Skip, the audit log out of reach with the agent's reason.
func TestNodeTierAuditOff(t *testing.T) {
	env := &measure.Env{Clock: clock.RealClock{}, Log: slog.New(slog.DiscardHandler), NodeTier: &cpnodetest.Stub{On: []string{"cp"}}}
	res := measure.RunOne(context.Background(), env, New(time.Millisecond, nil))
	if res.Status != result.StatusSkip || len(res.OutOfReach) != 1 || !strings.Contains(res.OutOfReach[0].Why, "audit off") {
		t.Errorf("%s %q %+v", res.Status, res.Reason, res.OutOfReach)
	}
}

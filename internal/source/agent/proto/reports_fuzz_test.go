package agentproto

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/agent"
)

// FuzzAgentReports: what an agent prints (its pod's log, which an agent on a broken node or a look-alike
// pod can fill with anything) decodes to a report or a clear error, never a panic. Seeded with the node
// agent's real reports of the agent's fixture hosts (the lab's /proc and /sys, and the faults' copies),
// behind the progress lines its log carries, and with a bench report.
func FuzzAgentReports(f *testing.F) {
	for _, host := range []string{"healthy", "hung-io", "neigh-overflow"} {
		r := filepath.Join("../testdata/hosts", host)
		h := agent.ReadNodeHost(context.Background(), agent.NodeHostOptions{Proc: r + "/proc", NetProc: r + "/proc", Sys: r + "/sys", Root: r + "/root", Window: 10 * time.Millisecond})
		b, err := json.Marshal(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte("agent: probing the host\n"), b...))
		if net, err := json.Marshal(h.Net); err == nil {
			f.Add(net)
		}
	}
	f.Add([]byte(`{"apiVersion":"kubeslow.dev/v1alpha1","kind":"Report","runID":"x","tool":{"name":"kubeslow","version":"v"},"cluster":{"name":"local","server":"","nodes":{"total":0,"ready":0}},` +
		`"start":"2026-11-24T01:00:00Z","end":"2026-11-24T01:00:01Z","results":[{"name":"http","status":"Pass","metrics":[{"name":"rps","unit":"1/s","value":9}]}],"findings":[]}`))
	f.Add([]byte(`[{"name":"a.b.","resolved":true,"attempts":2}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := (NodeHost{}).Decode(b); err == nil && (h == nil || h.Net == nil) {
			t.Fatalf("node report without its network section from %q", b)
		}
		if nn, err := (ProbeNode{}).Decode(b); err == nil && nn == nil {
			t.Fatal("nil node probe without an error")
		}
		_, _ = (DNSWait{}).Decode(b)
		if r, err := (BenchHTTP{}).Decode(b); err == nil && (r == nil || r.Name == "") {
			t.Fatalf("bench result without a name: %+v", r)
		}
	})
}

package agentproto

import (
	"strings"
	"testing"
	"time"
)

func TestDecodeRejectsBadOutput(t *testing.T) {
	for _, out := range []string{"", "{", "not json", `{"version":"x"}`} {
		if _, err := (ProbeNode{}).Decode([]byte(out)); err == nil && out != `{"version":"x"}` {
			t.Errorf("probe node %q: no error", out)
		}
		if _, err := (DNSWait{}).Decode([]byte(out)); err == nil {
			t.Errorf("dns-wait %q: no error", out)
		}
		if _, err := (BenchHTTP{}).Decode([]byte(out)); err == nil {
			t.Errorf("bench http %q: no error", out)
		}
	}
	ws, err := (DNSWait{}).Decode([]byte(`[{"name":"a.","attempts":3,"nxdomain":2,"first_attempt":"2026-01-01T00:00:00Z"}]`))
	if err != nil || len(ws) != 1 || ws[0].Attempts != 3 || ws[0].NXDomain != 2 {
		t.Fatalf("dns-wait decode: %+v %v", ws, err)
	}
}

func TestArgv(t *testing.T) {
	got := strings.Join(Argv(DNSWait{Interval: time.Second, Wait: time.Minute, Names: []string{"x."}}), " ")
	if got != "/kubeslow probe dns-wait --interval 1s --wait 1m0s x." {
		t.Errorf("argv %q", got)
	}
	if got := strings.Join(Serve{Listen: ":1"}.Args(), " "); got != "agent serve --listen :1" {
		t.Errorf("serve without TCP: %q", got)
	}
}

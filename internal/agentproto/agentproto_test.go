package agentproto

import (
	"encoding/json"
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

// TestJobPeerDecode: the report is the last JSON line of the member's log; a log without one is an error.
func TestJobPeerDecode(t *testing.T) {
	p, err := (JobPeer{}).Decode([]byte("starting\n{\"host\":\"j-0\",\"accepted\":2,\"names\":[{\"name\":\"j-1.\",\"attempts\":4}]}\n"))
	if err != nil || p.Host != "j-0" || p.Accepted != 2 || len(p.Names) != 1 || p.Names[0].Attempts != 4 {
		t.Fatalf("decode: %+v %v", p, err)
	}
	for _, bad := range []string{"", "no report\n", "{\"host\":"} {
		if _, err := (JobPeer{}).Decode([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
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

// FuzzJobPeerDecode: any log decodes to a report or an error, never a panic; a decoded report re-encodes.
func FuzzJobPeerDecode(f *testing.F) {
	f.Add([]byte("{\"host\":\"j-0\",\"names\":[{\"name\":\"j-1.\",\"attempts\":1}],\"connects\":[{\"name\":\"j-1.\",\"attempts\":2}]}\n"))
	f.Add([]byte("x\n{\n{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := (JobPeer{}).Decode(b)
		if err != nil {
			return
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatalf("decoded %+v does not re-encode: %v", p, err)
		}
	})
}

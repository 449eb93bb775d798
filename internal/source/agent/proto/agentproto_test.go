package agentproto

import (
	"bytes"
	"encoding/json"
	"math"
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

// TestDiskSampleLines: the sampler's JSON lines decode, -1 is "not probed" (NaN), and the command's progress
// lines that share the pod's log are skipped.
func TestDiskSampleLines(t *testing.T) {
	var d DiskSample
	s, ok := d.DecodeLine([]byte(`{"t":"2026-11-24T01:00:00Z","device":"loop3","syncSeconds":0.0021,"writeIOPS":120,"ioSomePercent":12.5,"dState":2}` + "\n"))
	if !ok || s.Device != "loop3" || s.SyncSeconds != 0.0021 || s.WriteIOPS != 120 || s.IOSomePercent != 12.5 || s.DState != 2 {
		t.Fatalf("sample %+v ok %v", s, ok)
	}
	if s, ok := d.DecodeLine([]byte(`{"t":"2026-11-24T01:00:01Z","syncSeconds":-1}`)); !ok || !math.IsNaN(s.SyncSeconds) {
		t.Errorf("not probed: %+v ok %v", s, ok)
	}
	for _, line := range []string{"", "sampling /var/lib/containerd (device \"sda\") every 1s for 10m0s", "{", `{"syncSeconds":1}`, `{"t":"x"}`} {
		if _, ok := d.DecodeLine([]byte(line)); ok {
			t.Errorf("%q decoded as a sample", line)
		}
	}
}

func FuzzDiskSampleLine(f *testing.F) {
	f.Add([]byte(`{"t":"2026-11-24T01:00:00Z","device":"loop3","syncSeconds":0.0021}`))
	f.Add([]byte(`{"t":"2026-11-24T01:00:00Z","syncSeconds":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, ok := (DiskSample{}).DecodeLine(b); ok && s.T.IsZero() {
			t.Errorf("a sample without a time: %q", b)
		}
	})
}

// TestBenchDiskDecode: the report is found after the progress lines of the pod's log.
func TestBenchDiskDecode(t *testing.T) {
	rep := `{"apiVersion":"kubeslow.dev/v1alpha1","kind":"Report","runId":"x","tool":{"name":"kubeslow","version":"v"},"cluster":{"name":"local"},` +
		`"start":"2026-11-24T01:00:00Z","end":"2026-11-24T01:00:01Z","results":[{"name":"disk.fdatasync","status":"Pass","start":"2026-11-24T01:00:00Z","end":"2026-11-24T01:00:01Z",` +
		`"metrics":[{"name":"fdatasync_p99","unit":"seconds","value":0.002}]}],"findings":[]}`
	for _, out := range []string{rep, "writing 1048576 bytes in 2300-byte writes\n" + rep + "\nsummary: 1 ran\n"} {
		r, err := (BenchDisk{}).Decode([]byte(out))
		if err != nil {
			t.Fatalf("%v", err)
		}
		if m := r.Metric("fdatasync_p99", nil); m == nil || m.Value != 0.002 {
			t.Errorf("decoded %+v", r)
		}
	}
	if _, err := (BenchDisk{}).Decode([]byte("writing\nno report\n")); err == nil {
		t.Error("no report decoded")
	}
	// As the command writes it (indented), with its stderr summary line logged between any two of the
	// report's lines: the runtime logs each stream's lines as it reads them.
	var ind bytes.Buffer
	if err := json.Indent(&ind, []byte(rep), "", "  "); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(ind.String(), "\n")
	for i := range len(lines) + 1 {
		out := "writing 1048576 bytes\n" + strings.Join(lines[:i], "") + "\n1 measurements ran, 0 skipped, 0 errored, 0 findings\n" + strings.Join(lines[i:], "")
		r, err := (BenchDisk{}).Decode([]byte(out))
		if err != nil {
			t.Fatalf("summary after line %d: %v\n%s", i, err, out)
		}
		if m := r.Metric("fdatasync_p99", nil); m == nil || m.Value != 0.002 {
			t.Errorf("summary after line %d: decoded %+v", i, r)
		}
	}
}

// TestNodeHostDecodeSkipsStderr: the node agent's report is its first JSON line, whatever its stderr logged
// before it.
func TestNodeHostDecodeSkipsStderr(t *testing.T) {
	h, err := (NodeHost{}).Decode([]byte("time=x level=INFO msg=probing\n{\"node\":\"n1\",\"net\":{}}\nlater\n"))
	if err != nil || h.Net == nil {
		t.Fatalf("decode: %+v %v", h, err)
	}
	if _, err := (NodeHost{}).Decode([]byte("no report\n")); err == nil {
		t.Error("no report decoded")
	}
}

// TestControlPlaneDecode: the header line and the bytes after it; a count that does not match, a body over
// the bound or no header is an error.
func TestControlPlaneDecode(t *testing.T) {
	s, err := CPScrape{MaxBytes: 100}.Decode([]byte("{\"component\":\"etcd\",\"status\":200,\"bytes\":6}\nm 1\n\n\n"))
	if err != nil || s.Status != 200 || string(s.Body) != "m 1\n\n\n" {
		t.Fatalf("scrape: %+v %v", s, err)
	}
	for _, bad := range []string{"", "{\"bytes\":1}", "{\"bytes\":3}\nab", "{\"bytes\":200}\n" + strings.Repeat("x", 200), "x\n"} {
		if _, err := (CPScrape{MaxBytes: 100}).Decode([]byte(bad)); err == nil {
			t.Errorf("scrape %q: no error", bad)
		}
		if _, err := (CPAudit{MaxBytes: 100}).Decode([]byte(bad)); err == nil {
			t.Errorf("audit %q: no error", bad)
		}
	}
	a, err := CPAudit{MaxBytes: 100}.Decode([]byte("{\"next\":{\"file\":\"audit.log\",\"inode\":5,\"offset\":9},\"bytes\":4,\"eof\":true}\n{}\n\n"))
	if err != nil || a.Next.Inode != 5 || a.Next.Offset != 9 || !a.EOF || string(a.Data) != "{}\n\n" {
		t.Fatalf("audit: %+v %v", a, err)
	}
	if _, err := (ControlPlane{}).Decode([]byte(`{"cores":2}`)); err == nil {
		t.Error("a report without its network namespace decoded")
	}
	cp, err := ControlPlane{}.Decode([]byte(`{"cores":2,"netns":"net:[1]","components":[{"name":"etcd","pid":3,"flags":{},"cpu":{"rate":0.5}}]}` + "\n"))
	if err != nil || len(cp.Components) != 1 || cp.Components[0].CPU.Rate != 0.5 {
		t.Fatalf("control-plane: %+v %v", cp, err)
	}
}

func FuzzHeaderBody(f *testing.F) {
	f.Add([]byte("{\"bytes\":2}\nab"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := (CPScrape{MaxBytes: 64}).Decode(b); err == nil && (len(s.Body) != s.Bytes || len(s.Body) > 64) {
			t.Fatalf("%q: %+v", b, s)
		}
		if a, err := (CPAudit{MaxBytes: 64}).Decode(b); err == nil && len(a.Data) != a.Bytes {
			t.Fatalf("%q: %+v", b, a)
		}
	})
}

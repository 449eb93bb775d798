package run

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/promql/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func runCmd(t *testing.T, args ...string) (*result.Report, int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := NewCommand(common.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	code := 0
	var ee *common.ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	} else if err != nil {
		t.Fatal(err)
	}
	if code == 2 {
		return nil, code, errb.String() + err.Error()
	}
	rep, derr := result.Decode(bytes.NewReader(out.Bytes()))
	if derr != nil {
		t.Fatalf("report: %v\n%s", derr, out.String())
	}
	return rep, code, errb.String()
}

// TestRunPrometheus runs `kubeslow run --prometheus` as a user does, over a real Prometheus backfilled with two
// scrapes of the lab's apiserver during a conflict storm: KS-API-409 and exit 1; nothing reachable: exit 2.
func TestRunPrometheus(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	labels := map[string]string{"job": "apiserver", "instance": "a:6443"}
	url := promtest.Start(t, []promtest.Scrape{
		{At: t0, Text: promtest.ReadScrape(t, "../../source/prom/testdata/apiserver-metrics-conflict-storm-1.txt.gz"), Labels: labels},
		{At: t0.Add(time.Minute), Text: promtest.ReadScrape(t, "../../source/prom/testdata/apiserver-metrics-conflict-storm-2.txt.gz"), Labels: labels}})
	rep, code, stderr := runCmd(t, "--prometheus", url, "--from", t0.UTC().Format(time.RFC3339), "--to", t0.Add(time.Minute).UTC().Format(time.RFC3339),
		"-o", "json", "--out-dir", "")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (findings)\n%s", code, stderr)
	}
	found := false
	for _, f := range rep.Findings {
		found = found || f.ID == "KS-API-409"
	}
	if !found || rep.Result("etcd.health").Status != result.StatusSkip {
		t.Fatalf("findings %+v; etcd.health %+v", rep.Findings, rep.Result("etcd.health"))
	}
	if !strings.Contains(stderr, "queries") {
		t.Fatalf("no cost line on stderr:\n%s", stderr)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if _, code, msg := runCmd(t, "--prometheus", "http://"+addr, "--last", "1h", "--out-dir", ""); code != 2 || !strings.Contains(msg, "unreachable") {
		t.Fatalf("unreachable Prometheus: exit %d: %s", code, msg)
	}
	if _, code, msg := runCmd(t, "--prometheus", url, "--out-dir", ""); code != 2 || !strings.Contains(msg, "needs a window") {
		t.Fatalf("no window: exit %d: %s", code, msg)
	}
}

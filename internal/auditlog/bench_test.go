package auditlog

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkParseAndAnalyze is kubeslow's audit throughput (MB/s in the output), one goroutine.
func BenchmarkParseAndAnalyze(b *testing.B) {
	data := genLog(20000, true, true)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		a := NewAnalyzer()
		for _, l := range lines {
			ev, err := ParseLine(l)
			if err != nil {
				b.Fatal(err)
			}
			a.Add(&ev)
		}
		a.Result(10)
	}
}

// TestCompareJQ runs jq and kubeslow over the same ~200 MB audit file, in one run, and prints the throughput
// of each and their ratio. Set KUBESLOW_BENCH_JQ=1 to run it (it is a benchmark, not a pass/fail test).
func TestCompareJQ(t *testing.T) {
	if os.Getenv("KUBESLOW_BENCH_JQ") == "" {
		t.Skip("benchmark: set KUBESLOW_BENCH_JQ=1")
	}
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed")
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	chunk := genLog(50000, true, true)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for size < 200<<20 {
		n, _ := f.Write(chunk)
		size += int64(n)
	}
	f.Close()
	mb := float64(size) / 1e6
	for round := 1; round <= 3; round++ {
		t0 := time.Now()
		st, err := Read(context.Background(), []string{path}, NewAnalyzer().Add, nil)
		ours := time.Since(t0)
		if err != nil || st.BadLines != 0 {
			t.Fatal(err, st.BadLines)
		}
		t0 = time.Now()
		// jq extracting the same fields (it does less: no aggregation).
		cmd := exec.Command(jq, "-c", "[.user.username, .userAgent, .verb, .objectRef.resource, .responseStatus.code, .stage]", path)
		cmd.Stdout = nil
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		theirs := time.Since(t0)
		t.Logf("round %d: %.0f MB: kubeslow %.0f MB/s (%s), jq %.0f MB/s (%s), ratio kubeslow/jq %.1fx",
			round, mb, mb/ours.Seconds(), ours.Round(time.Millisecond), mb/theirs.Seconds(), theirs.Round(time.Millisecond), theirs.Seconds()/ours.Seconds())
	}
}

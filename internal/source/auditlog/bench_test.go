package auditlog

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkParseAndAnalyze is kubeslow's audit throughput (MB/s in the output), one goroutine.
func BenchmarkParseAndAnalyze(b *testing.B) {
	data := genLog(20000, true, true)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	c0 := cpuTime()
	for b.Loop() {
		a := NewAnalyzer()
		p := parser{intern: map[string]string{}}
		var ev Event
		for _, l := range lines {
			if err := p.parse(l, &ev); err != nil {
				b.Fatal(err)
			}
			a.Add(&ev)
		}
		a.Result(10)
	}
	// CPU time is steadier than wall time on a shared machine.
	b.ReportMetric(float64(len(data))*float64(b.N)/1e6/(cpuTime()-c0).Seconds(), "cpu-MB/s")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompareJQ reads the same ~200 MB audit file with kubeslow (parse and full aggregation, on
// GOMAXPROCS cores: -cpu 1 for one) and with Debian's jq (field extraction only: less work than kubeslow's),
// alternately in the same run, and reports the throughput of each and their ratio:
// go test -run '^$' -bench CompareJQ -benchtime 3x -cpu 1,2 ./internal/source/auditlog. hack/bench-jq.sh compares
// the binaries, with jq doing kubeslow's aggregation too.
func BenchmarkCompareJQ(b *testing.B) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		b.Skip("jq is not installed")
	}
	path := filepath.Join(b.TempDir(), "audit.log")
	size, err := writeBenchLog(path, 200<<20)
	if err != nil {
		b.Fatal(err)
	}
	mb := float64(size) / 1e6
	var ours, theirs time.Duration
	for b.Loop() {
		t0 := time.Now()
		st, err := Read(context.Background(), []string{path}, NewAnalyzer().Add, nil)
		ours += time.Since(t0)
		if err != nil || st.BadLines != 0 {
			b.Fatal(err, st.BadLines)
		}
		t0 = time.Now()
		// jq extracting the same fields (it does less: no aggregation).
		cmd := exec.Command(jq, "-c", "[.user.username, .userAgent, .verb, .objectRef.resource, .objectRef.subresource, .objectRef.namespace, .objectRef.name, .responseStatus.code, .stage, .requestReceivedTimestamp]", path)
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		theirs += time.Since(t0)
	}
	b.ReportMetric(mb*float64(b.N)/ours.Seconds(), "kubeslow-MB/s")
	b.ReportMetric(mb*float64(b.N)/theirs.Seconds(), "jq-MB/s")
	b.ReportMetric(theirs.Seconds()/ours.Seconds(), "x-jq")
}

// BenchmarkParseAndAnalyzeLab is the same on the real lab log's lines (testdata), one goroutine.
func BenchmarkParseAndAnalyzeLab(b *testing.B) {
	lines := labLines(b, 1<<20)
	var size int64
	for _, l := range lines {
		size += int64(len(l)) + 1
	}
	b.SetBytes(size)
	b.ReportAllocs()
	c0 := cpuTime()
	for b.Loop() {
		a := NewAnalyzer()
		p := parser{intern: map[string]string{}}
		var ev Event
		for _, l := range lines {
			if err := p.parse(l, &ev); err != nil {
				b.Fatal(err)
			}
			a.Add(&ev)
		}
		a.Result(10)
	}
	b.ReportMetric(float64(size)*float64(b.N)/1e6/(cpuTime()-c0).Seconds(), "cpu-MB/s")
}

// BenchmarkRead is Read (file, blocks, workers) and the analysis over ~50 MB of the lab log repeated, on
// GOMAXPROCS cores (-cpu 1,2).
func BenchmarkRead(b *testing.B) {
	lines := labLines(b, 1<<20)
	one := append(bytes.Join(lines, []byte("\n")), '\n')
	path := filepath.Join(b.TempDir(), "audit.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for size < 50<<20 {
		n, _ := f.Write(one)
		size += int64(n)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	c0 := cpuTime()
	for b.Loop() {
		a := NewAnalyzer()
		if _, err := Read(context.Background(), []string{path}, a.Add, nil); err != nil {
			b.Fatal(err)
		}
		a.Result(10)
	}
	b.ReportMetric(float64(size)*float64(b.N)/1e6/(cpuTime()-c0).Seconds(), "cpu-MB/s")
}

package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// bigReport is a report of a run with pods pods over pods/100 nodes: pod start-up records for each, churn
// (a start per pod, disk samples of three nodes), an observed control plane window, a path matrix, the
// sample's findings.
func bigReport(pods int) *result.Report {
	rep := fullSample()
	t0 := rep.Start
	ps := &rep.Results[0]
	ps.Records = nil
	nodes := max(1, pods/100)
	for i := range pods {
		node := fmt.Sprintf("lab-node-%d", i%nodes)
		sandbox := 0.2 + 0.1*math.Sin(float64(i))
		if i%nodes == 7 {
			sandbox += 3
		}
		ps.Records = append(ps.Records, result.Record{ID: fmt.Sprintf("kubeslow-run/pod-%05d", i), Labels: map[string]string{"node": node},
			Values: map[string]float64{"schedule_seconds": 0.01 + float64(i%50)/1e3, "sandbox_seconds": sandbox, "start_seconds": 0.3 + float64(i%13)/50,
				"observe_seconds": 0.05, "sli_seconds": 0.4 + sandbox + float64(i%13)/50, "pull_seconds": 0},
			Times: map[string]time.Time{"created": t0.Add(time.Duration(i) * 10 * time.Millisecond)}})
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Name != "pods.churn" {
			continue
		}
		st := result.Series{Name: "start_latency", Unit: "seconds", Marks: r.Series[0].Marks}
		for j := range pods {
			v := 0.9 + 0.3*math.Sin(float64(j)*1.3)
			if j > pods*6/10 {
				v *= 4
			}
			st.Points = append(st.Points, result.Point{T: t0.Add(time.Duration(j) * 120 * time.Millisecond), V: v})
		}
		r.Series = []result.Series{st}
		for n := range 3 {
			s := result.Series{Name: "disk_sync_latency", Unit: "seconds", Labels: map[string]string{"node": fmt.Sprintf("lab-node-%d", n)}}
			for j := range 1200 {
				s.Points = append(s.Points, result.Point{T: t0.Add(time.Duration(j) * time.Second), V: 0.002 * (1 + float64(j%7))})
			}
			r.Series = append(r.Series, s)
		}
	}
	return rep
}

// MaxReportBytes is the size a 10,000-pod report stays under.
const MaxReportBytes = 5 << 20

// TestHTMLSize10kPods: the page of a 10,000-pod run stays under 5 MB (its load time in Chromium is measured
// by hack/bench-report.sh).
func TestHTMLSize10kPods(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, bigReport(10000)); err != nil {
		t.Fatal(err)
	}
	if b.Len() > MaxReportBytes {
		t.Errorf("a 10,000-pod report is %d bytes, over %d", b.Len(), MaxReportBytes)
	}
	t.Logf("10,000 pods: %d bytes (library %d)", b.Len(), len(echartsJS))
}

func BenchmarkHTML10kPods(b *testing.B) {
	rep := bigReport(10000)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if err := WriteHTML(&buf, rep); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
}

// TestWriteBenchPage writes the 10,000-pod page for hack/bench-report.sh (KUBESLOW_BENCH_HTML=path,
// KUBESLOW_BENCH_PODS=n).
func TestWriteBenchPage(t *testing.T) {
	path := os.Getenv("KUBESLOW_BENCH_HTML")
	if path == "" {
		t.Skip("set KUBESLOW_BENCH_HTML to a file to write")
	}
	pods := 10000
	if s := os.Getenv("KUBESLOW_BENCH_PODS"); s != "" {
		if _, err := fmt.Sscan(s, &pods); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, bigReport(pods)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

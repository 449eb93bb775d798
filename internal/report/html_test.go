package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestWriteHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// Well-formed: every element closes (the HTML tokenizer of encoding/xml in lenient mode).
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict, dec.AutoClose, dec.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("malformed page: %v", err)
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Errorf("unbalanced elements: depth %d", depth)
	}
	// Percentiles (one group, seconds), the CDF of the SLI, phases per node, the etcd series.
	if n := strings.Count(page, "<svg "); n != 4 {
		t.Errorf("%d plots, want 4", n)
	}
	for _, want := range []string{
		`href="#r-pods-startup"`, `id="r-pods-startup"`, `id="r-etcd-health"`, // findings link to their evidence
		"CDF of sli_seconds over 60 records", "phases per node", "change point", "wal_fsync_p99 (seconds)",
		"lab &lt;test&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;", // escaped
		"no audit log given", "could not create the probe pod", "not evaluated (their inputs were not measured",
		"KS-AUDIT-LIST: api.audit was not measured",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "http://") && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Error("page has a script or an external reference")
	}
	// Findings come first, worst first.
	if i, j, k := strings.Index(page, "KS-POD-SLO"), strings.Index(page, "KS-POD-NODE"), strings.Index(page, `id="results"`); !(i < j && j < k) {
		t.Errorf("findings not first and worst first: %d %d %d", i, j, k)
	}
	// The slow node's bar is the first (slowest first) of the stacked plot.
	if i, j := strings.Index(page, ">kwok-node-2 (20)<"), strings.Index(page, ">kwok-node-0 (20)<"); i < 0 || j < 0 || i > j {
		t.Errorf("slow node not first in the per-node plot: %d %d", i, j)
	}
}

func TestWriteHTMLEmpty(t *testing.T) {
	var b bytes.Buffer
	r := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: "x",
		Results: []result.Result{{Name: "a", Status: result.StatusPass, Series: []result.Series{{Name: "s", Points: []result.Point{{V: 1}}}}}}}
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<svg ") || !strings.Contains(b.String(), "None: nothing measured crossed a threshold") {
		t.Errorf("empty report: %s", b.String())
	}
}

func TestNiceMax(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.07: 0.1, 0.3: 0.5, 1: 1, 1.2: 2, 7.1: 10, 186: 200, -3: 1} {
		if got := niceMax(in); got != want {
			t.Errorf("niceMax(%v) = %v, want %v", in, got, want)
		}
	}
}

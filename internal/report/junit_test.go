package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

func TestWriteJUnit(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	if len(got.Suites) != 2 {
		t.Fatalf("suites %+v", got.Suites)
	}
	m, r := got.Suites[0], got.Suites[1]
	if m.Tests != 4 || m.Failures != 1 || m.Errors != 1 || m.Skipped != 1 {
		t.Errorf("measurements suite: tests %d failures %d errors %d skipped %d", m.Tests, m.Failures, m.Errors, m.Skipped)
	}
	if r.Tests != 4 || r.Failures != 2 || r.Skipped != 1 {
		t.Errorf("rules suite: tests %d failures %d skipped %d", r.Tests, r.Failures, r.Skipped)
	}
	var slo *junitCase
	for i := range r.Cases {
		if r.Cases[i].Name == "KS-POD-SLO" {
			slo = &r.Cases[i]
		}
	}
	if slo == nil || slo.Failure == nil || !strings.Contains(slo.Failure.Message, "p99 7.1 s > 5 s") || !strings.Contains(slo.Failure.Body, "threshold: > 5 seconds (SIG Scalability)") {
		t.Errorf("KS-POD-SLO case %+v", slo)
	}
	// One case per rule; a rule that fired on several nodes lists them in its one failure, worst first.
	for _, c := range r.Cases {
		if c.Name == "KS-POD-NODE" && (c.Failure == nil || !strings.Contains(c.Failure.Body, "2 items, worst first:\n    node=kwok-node-2: 5.4\n    node=kwok-node-7: 2.5\n")) {
			t.Errorf("KS-POD-NODE case %+v", c)
		}
	}
}

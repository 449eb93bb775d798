package result

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func explanation() *Explanation {
	return &Explanation{APIVersion: ExplanationAPIVersion, Kind: ExplanationKind, Target: ExplainTarget{Kind: "pod", Namespace: "ns", Name: "p"},
		Read: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), Verdicts: []Finding{},
		Pods: []PodTimeline{{Name: "p", Steps: []Step{{Name: "scheduling", Status: StepDone, Seconds: 1, Source: "creationTimestamp → condition PodScheduled", Precision: PrecisionSecond}}}}}
}

// TestExplanationRoundTrip: an Explanation encodes and decodes; the invariants a consumer relies on are held.
func TestExplanationRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := EncodeExplanation(&buf, explanation()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"kind": "Explanation"`) {
		t.Errorf("%s", buf.String())
	}
	if _, err := DecodeExplanation(&buf); err != nil {
		t.Fatal(err)
	}
	for name, broken := range map[string]func(*Explanation){
		"kind":      func(e *Explanation) { e.Kind = "Report" },
		"precision": func(e *Explanation) { e.Pods[0].Steps[0].Precision = "1ns" },
		"status":    func(e *Explanation) { e.Pods[0].Steps[0].Status = "late" },
		"seconds":   func(e *Explanation) { e.Pods[0].Steps[0].Seconds = -1 },
		"source":    func(e *Explanation) { e.Pods[0].Steps[0].Source = "" },
		"verdict":   func(e *Explanation) { e.Verdicts = []Finding{{ID: "KS-X", Title: "x", Severity: SeverityInfo}} },
	} {
		e := explanation()
		broken(e)
		if err := EncodeExplanation(&bytes.Buffer{}, e); err == nil {
			t.Errorf("%s: an invalid explanation was encoded", name)
		}
	}
	if _, err := DecodeExplanation(strings.NewReader(`{"apiVersion":"kubeslow.dev/v1alpha1","kind":"Explanation","extra":1}`)); err == nil {
		t.Error("an unknown field was accepted")
	}
}

package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// JUnit XML for CI pipelines: one test suite for the measurements (a result that could not measure is an
// error, a skipped one is skipped) and one for the rules (a fired rule is a failure carrying the finding; a
// rule whose inputs were not measured is skipped, never passed).

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      float64     `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// WriteJUnit renders the report as JUnit XML.
func WriteJUnit(w io.Writer, r *result.Report) error {
	ms := junitSuite{Name: "kubeslow.measurements", Time: r.End.Sub(r.Start).Seconds()}
	if !r.Start.IsZero() {
		ms.Timestamp = r.Start.UTC().Format("2006-01-02T15:04:05")
	}
	for _, res := range r.Results {
		c := junitCase{Name: res.Name, Classname: "kubeslow.measurements", Time: max(0, res.End.Sub(res.Start).Seconds())}
		switch res.Status {
		case result.StatusSkip:
			c.Skipped, ms.Skipped = &junitMessage{Message: res.Reason}, ms.Skipped+1
		case result.StatusError:
			c.Error, ms.Errors = &junitMessage{Message: res.Reason, Type: "could not measure"}, ms.Errors+1
		case result.StatusFail:
			c.Failure, ms.Failures = &junitMessage{Message: res.Reason, Type: "measured and bad"}, ms.Failures+1
		}
		var b strings.Builder
		for _, m := range res.Metrics {
			fmt.Fprintf(&b, "%s %s %s %s\n", m.Name, result.FormatValue(m.Value), m.Unit, result.FormatLabels(m.Labels))
		}
		c.SystemOut = b.String()
		ms.Cases = append(ms.Cases, c)
	}
	ms.Tests = len(ms.Cases)

	rs := junitSuite{Name: "kubeslow.rules"}
	byID := map[string][]result.Finding{}
	for _, f := range r.Findings {
		byID[f.ID] = append(byID[f.ID], f)
	}
	for _, ev := range r.Rules {
		c := junitCase{Name: ev.ID, Classname: "kubeslow.rules"}
		switch ev.Status {
		case result.RuleFired:
			fs := byID[ev.ID]
			msg := ev.ID
			var b strings.Builder
			for _, f := range fs {
				msg = fmt.Sprintf("[%s] %s: %s", f.Severity, f.Title, f.Summary)
				writeFinding(&b, f)
			}
			c.Failure, rs.Failures = &junitMessage{Message: msg, Type: "finding", Body: b.String()}, rs.Failures+1
		case result.RuleNotEvaluated:
			c.Skipped, rs.Skipped = &junitMessage{Message: "not evaluated: " + ev.Reason}, rs.Skipped+1
		}
		rs.Cases = append(rs.Cases, c)
	}
	rs.Tests = len(rs.Cases)

	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Name: "kubeslow " + r.RunID, Suites: []junitSuite{ms, rs}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// writeFinding writes a finding's summary, evidence, threshold and fix, one per line.
func writeFinding(b *strings.Builder, f result.Finding) {
	fmt.Fprintf(b, "%s: %s\n", f.ID, f.Summary)
	if len(f.Items) > 1 {
		fmt.Fprintf(b, "  %s:\n", ItemsHeading(f))
		for _, it := range f.Items {
			fmt.Fprintf(b, "    %s: %s\n", ItemName(it), result.FormatQuantity(it.Value, f.Threshold.Unit))
		}
	}
	for _, e := range f.Evidence {
		fmt.Fprintf(b, "  evidence: %s = %s %s %s\n", e.Name, result.FormatValue(e.Value), e.Unit, result.FormatLabels(e.Labels))
	}
	fmt.Fprintf(b, "  threshold: %s %s %s (%s)\n  fix: %s\n", f.Threshold.Op, result.FormatValue(f.Threshold.Value), f.Threshold.Unit, f.Threshold.Source, f.Remediation)
}

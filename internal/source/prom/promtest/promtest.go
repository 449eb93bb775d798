// Package promtest writes Prometheus text expositions and reads the scrapes recorded on the lab, for the
// fixtures of the measurements that analyse metrics.
package promtest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/prom"
)

// Expo writes a Prometheus text exposition: families in order, each with its TYPE line.
type Expo struct {
	order []string
	typ   map[string]string
	lines map[string][]string
}

// NewExpo returns an empty exposition.
func NewExpo() *Expo { return &Expo{typ: map[string]string{}, lines: map[string][]string{}} }

func (e *Expo) add(family, typ, line string) {
	if _, ok := e.typ[family]; !ok {
		e.order = append(e.order, family)
		e.typ[family] = typ
	}
	e.lines[family] = append(e.lines[family], line)
}

// Counter adds a counter sample.
func (e *Expo) Counter(name, labels string, v float64) {
	e.add(name, "counter", fmt.Sprintf("%s{%s} %g", name, labels, v))
}

// Gauge adds a gauge sample.
func (e *Expo) Gauge(name, labels string, v float64) {
	e.add(name, "gauge", fmt.Sprintf("%s{%s} %g", name, labels, v))
}

var bounds = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Hist adds a histogram of n observations of value v (labels without le).
func (e *Expo) Hist(name, labels string, n int, v float64) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	for _, b := range bounds {
		c := 0
		if v <= b {
			c = n
		}
		e.add(name, "histogram", fmt.Sprintf("%s_bucket{%s%sle=\"%g\"} %d", name, labels, sep, b, c))
	}
	e.add(name, "histogram", fmt.Sprintf("%s_bucket{%s%sle=\"+Inf\"} %d", name, labels, sep, n))
	e.add(name, "histogram", fmt.Sprintf("%s_sum{%s} %g", name, labels, float64(n)*v))
	e.add(name, "histogram", fmt.Sprintf("%s_count{%s} %d", name, labels, n))
}

// Snapshot parses the exposition as a scrape taken at at.
func (e *Expo) Snapshot(t *testing.T, at time.Time) *prom.Snapshot {
	t.Helper()
	var b strings.Builder
	for _, f := range e.order {
		fmt.Fprintf(&b, "# TYPE %s %s\n%s\n", f, e.typ[f], strings.Join(e.lines[f], "\n"))
	}
	s, err := prom.Parse(strings.NewReader(b.String()), at)
	if err != nil {
		t.Fatalf("exposition: %v\n%s", err, b.String())
	}
	return s
}

// Scrapes returns the two scrapes of a window from ruletest.T0: the same series, at zero and then as written
// by fill.
func Scrapes(t *testing.T, window time.Duration, fill func(e *Expo, scale float64)) (*prom.Snapshot, *prom.Snapshot) {
	before, after := NewExpo(), NewExpo()
	fill(before, 0)
	fill(after, 1)
	return before.Snapshot(t, ruletest.T0), after.Snapshot(t, ruletest.T0.Add(window))
}

// Recorded parses scrapes recorded on the lab (internal/source/prom/testdata, gzip by name), 20 s apart from
// ruletest.T0.
func Recorded(t *testing.T, files ...string) []*prom.Snapshot {
	t.Helper()
	var snaps []*prom.Snapshot
	for i, f := range files {
		b, err := os.ReadFile(ruletest.Path("internal/source/prom/testdata/" + f))
		if err != nil {
			t.Fatal(err)
		}
		r := io.Reader(bytes.NewReader(b))
		if strings.HasSuffix(f, ".gz") {
			if r, err = gzip.NewReader(r); err != nil {
				t.Fatal(err)
			}
		}
		s, err := prom.Parse(r, ruletest.T0.Add(time.Duration(i)*20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	return snaps
}

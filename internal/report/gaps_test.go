package report

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// managedLab is the report of a development build's `kubeslow run` from the kubeconfig on the managed-layout lab
// (51 nodes, 50 simulated, no control-plane node, no agent image), made by the runner with the real rules and
// the real measurements that met those gaps (internal/engine/runner's TestManagedLabFixture keeps it current).
func managedLab(t *testing.T) *result.Report {
	t.Helper()
	f, err := os.Open("testdata/managed-lab.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := result.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGapsSaidOnce: what could not be measured is said once per source — the HTML box, the text and the JSON
// list the same gaps, at most 8, each source once, every rule not evaluated under one of them.
func TestGapsSaidOnce(t *testing.T) {
	r := managedLab(t)
	if len(r.Gaps) == 0 || len(r.Gaps) > 8 {
		t.Fatalf("%d gaps, want 1..8", len(r.Gaps))
	}
	notEval := 0
	for _, e := range r.Rules {
		if e.Status == result.RuleNotEvaluated {
			notEval++
		}
	}
	listed := 0
	for _, g := range r.Gaps {
		listed += len(g.Rules)
	}
	if notEval < 20 || listed != notEval {
		t.Fatalf("%d rules not evaluated, %d listed under the gaps", notEval, listed)
	}

	var h bytes.Buffer
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	page := h.String()
	box := page[strings.Index(page, `<div class="unmeasured"`):]
	box = box[:strings.Index(box, "</ul></div>")]
	if !strings.Contains(box, "Could not measure (5)") || strings.Count(box, `<li class="gap"`) != len(r.Gaps) {
		t.Errorf("HTML box: %d entries for %d gaps:\n%s", strings.Count(box, `<li class="gap"`), len(r.Gaps), box)
	}
	for _, g := range r.Gaps {
		if n := strings.Count(box, `data-source="`+g.Source+`"`); n != 1 {
			t.Errorf("HTML box lists %s %d times", g.Source, n)
		}
	}
	for _, want := range []string{`<b>etcd&#39;s own metrics</b>`, `not measured: <a href="#r-etcd-health">etcd.health</a>`,
		"rules not evaluated: KS-ETCD-FSYNC, KS-ETCD-COMMIT", `not measured: <a href="#r-dns-readiness">dns.readiness</a>, <a href="#r-dns-lookups">dns.lookups</a>, <a href="#r-nodes-agent">nodes.agent</a>`,
		"measurements this run did not include", "not measured: net.paths"} {
		if !strings.Contains(box, want) {
			t.Errorf("HTML box lacks %q", want)
		}
	}
	if n := strings.Count(page, "none of the") + strings.Count(page, "kubeslow image push"); n != 1 {
		t.Errorf("the agent image's fix is said %d times in the page", n)
	}

	var tx bytes.Buffer
	if err := WriteText(&tx, r); err != nil {
		t.Fatal(err)
	}
	text := tx.String()
	lines := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "out of reach") || strings.Contains(l, "not evaluated") {
			lines++
		}
	}
	if lines > 12 {
		t.Errorf("%d lines say \"out of reach\" or \"not evaluated\", want at most 12:\n%s", lines, text)
	}
	if !strings.Contains(text, "COULD NOT MEASURE (5 source(s))") || strings.Count(text, "kubeslow image push") != 1 {
		t.Errorf("text:\n%s", text)
	}
	// Each gap is one entry of the text: its title at two spaces, once.
	for _, g := range r.Gaps {
		if n := len(regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(g.Title)+`: `).FindAllString(text, -1)); n != 1 {
			t.Errorf("text lists %s %d times", g.Source, n)
		}
	}
	// The per-measurement entries stay in the JSON, unchanged.
	if e := r.Result("etcd.health"); e == nil || !strings.Contains(e.Reason, "no etcd metrics: no --etcd-endpoint") || len(e.OutOfReach) != 1 {
		t.Errorf("etcd.health: %+v", e)
	}
}

// TestGapsOfAnOlderReport: a report without gaps (written before them, or by `kubeslow audit`) is folded by
// what it says: every rule not evaluated still under one gap, the sources by their out-of-reach keys.
func TestGapsOfAnOlderReport(t *testing.T) {
	r := managedLab(t)
	r.Gaps = nil
	for i := range r.Results {
		for j := range r.Results[i].OutOfReach {
			r.Results[i].OutOfReach[j].Source = ""
		}
	}
	gs := r.FoldedGaps()
	under := map[string]int{}
	for _, g := range gs {
		for _, id := range g.Rules {
			under[id]++
		}
	}
	for _, e := range r.Rules {
		if e.Status == result.RuleNotEvaluated && under[e.ID] != 1 {
			t.Errorf("rule %s under %d gaps", e.ID, under[e.ID])
		}
	}
	if len(gs) > 10 {
		t.Errorf("%d gaps from an older report", len(gs))
	}
	var tx bytes.Buffer
	if err := WriteText(&tx, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tx.String(), "COULD NOT MEASURE") {
		t.Errorf("no gaps in the text:\n%s", tx.String())
	}
}

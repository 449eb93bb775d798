// Package throttletest is system.throttling's analysis of cAdvisor scrapes recorded on the lab
// (hack/record-throttle.sh): the fixtures of its rule.
package throttletest

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Scrape is one recorded scrape of a node's /metrics/cadvisor (kube-system's CPU and CFS series).
type Scrape struct {
	Node string
	At   time.Time
	Text []byte
}

// Recorded reads a recording (testdata/recorded-NAME/NODE-UNIXSECONDS.txt), in time order.
func Recorded(t testing.TB, name string) []Scrape {
	t.Helper()
	dir := filepath.Join(ruletest.Path("internal/measure/throttle/testdata"), "recorded-"+name)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Scrape
	for _, e := range ents {
		base := strings.TrimSuffix(e.Name(), ".txt")
		i := strings.LastIndex(base, "-")
		sec, err := strconv.ParseInt(base[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("%s: want NODE-UNIXSECONDS.txt", e.Name())
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Scrape{Node: base[:i], At: time.Unix(sec, 0).UTC(), Text: b})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// Result is throttle.Analyze over each node's first and last scrape of the recording, as the live
// measurement reads the window's two ends.
func Result(t *testing.T, name string) result.Result {
	t.Helper()
	first, last := map[string]*prom.Snapshot{}, map[string]*prom.Snapshot{}
	for _, s := range Recorded(t, name) {
		snap, err := prom.Parse(bytes.NewReader(s.Text), s.At)
		if err != nil {
			t.Fatalf("%s at %s: %v", s.Node, s.At, err)
		}
		snap.Keep(throttle.Families...)
		if first[s.Node] == nil {
			first[s.Node] = snap
		}
		last[s.Node] = snap
	}
	return throttle.Analyze(first, last)
}

// RuleFixtures are the rule's fixtures: the lab's two CoreDNS pods under a 20m CPU limit loaded by `kubeslow
// bench dns-load` (throttled), and the same pods and load under a limit of 1 core (not throttled).
func RuleFixtures() map[string]ruletest.Fixture {
	rec := func(name string) func(t *testing.T) *result.Report {
		return ruletest.One(func(t *testing.T) result.Result { return Result(t, name) })
	}
	return map[string]ruletest.Fixture{
		"KS-SYSTEM-THROTTLED": {Fire: rec("limited"), Clear: rec("generous")},
	}
}

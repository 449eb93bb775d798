package result

import (
	"fmt"
	"regexp"
	"strings"
)

// Gap is one source a run could not read (etcd's metrics, the audit log, the control plane's cores, the agent
// image, a real node...), with everything it held back: the measurements it left unmeasured, the signals of
// measurements that ran without it, and the rules it left not evaluated. It is a view of the results' Status and
// Reason, OutOfReach and Absent entries and the rules' not-evaluated entries, which keep their own text: a
// report says each cause of "could not measure" once.
type Gap struct {
	// Source is the gap's stable key: one of kubeslow's sources ("etcd-metrics", "audit-log",
	// "control-plane-cpu", "node-tier", "agent-image", "real-nodes", "permissions", "not-run", ...), else
	// "reason:" and the normalised reason of what it holds back.
	Source string `json:"source"`
	// Title names what could not be read, e.g. "etcd's own metrics".
	Title string `json:"title"`
	// Reason is why, said once; Fix how to get it ("" when none is known).
	Reason string `json:"reason"`
	Fix    string `json:"fix,omitempty"`
	// Measurements are the results not measured (Skip, Error) for this reason.
	Measurements []string `json:"measurements,omitempty"`
	// Signals are what the measurements could not read from this source, each with the results that wanted it
	// in brackets: "etcd's own metrics: WAL fsync ... [etcd.health, controlplane.usage]".
	Signals []string `json:"signals,omitempty"`
	// Rules are the rules not evaluated because of this gap.
	Rules []string `json:"rules,omitempty"`
}

// SourceNotRun is the gap of the results a rule reads that the run did not include.
const SourceNotRun = "not-run"

// GapEntry is one thing a report could not measure: a result that was not measured (Status Skip or Error, with
// its Reason and its first OutOfReach entry, if any), or a signal out of reach or a metric absent from a result.
type GapEntry struct {
	Result     string
	Status     Status
	Reason     string
	OutOfReach *OutOfReach
	Absence    *Absence
}

// GapKey is the source of a gap entry: its key, title, reason and fix. Via, when set, is a source the entry
// was to be read through (the node agent on the control-plane nodes, which needs the agent image): the entry is
// listed under it too, so that its reason is said once, there.
type GapKey struct {
	Source, Title, Reason, Fix string
	Via                        *GapKey
}

// GapSources maps a gap entry to its source. kubeslow's own (measure.GapSource) knows its sources; DefaultGapSource
// knows only what the report says.
type GapSources func(GapEntry) GapKey

// Starved names what left a rule not evaluated: the result it reads that was not measured or not run, or the
// metric absent from it.
type Starved struct {
	Result string
	Metric string
}

// DefaultGapSource keys an out-of-reach signal by its Source (else its signal), and anything else by its
// normalised reason.
func DefaultGapSource(e GapEntry) GapKey {
	switch {
	case e.OutOfReach != nil:
		src := e.OutOfReach.Source
		if src == "" {
			src = "signal:" + normalise(e.OutOfReach.Signal)
		}
		return GapKey{Source: src, Title: e.OutOfReach.Signal, Reason: e.OutOfReach.Why, Fix: e.OutOfReach.Fix}
	case e.Absence != nil:
		reason := e.Absence.Reason
		if reason == "" {
			reason = "the source has no " + e.Absence.Series
		}
		return GapKey{Source: "reason:" + normalise(reason), Title: headOf(reason), Reason: reason}
	}
	return GapKey{Source: "reason:" + normalise(e.Reason), Title: headOf(e.Reason), Reason: e.Reason}
}

var (
	numbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
	spaces  = regexp.MustCompile(`\s+`)
)

// normalise makes a reason a key: lower case, numbers as '#', one space, at most 80 characters.
func normalise(s string) string {
	s = spaces.ReplaceAllString(numbers.ReplaceAllString(strings.ToLower(strings.TrimSpace(s)), "#"), " ")
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// headOf is a reason's first clause, as a title.
func headOf(s string) string {
	if i := strings.IndexAny(s, ":(;"); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// StarvedFromReason reads what left a rule not evaluated from its reason, as the rule engine writes it ("R was
// not run", "R was not measured (...)", "R M is absent: ..."): for reports that do not carry their gaps.
func StarvedFromReason(reason string) (Starved, bool) {
	name, rest, ok := strings.Cut(reason, " ")
	switch {
	case !ok || name == "":
		return Starved{}, false
	case rest == "was not run" || strings.HasPrefix(rest, "was not measured"):
		return Starved{Result: name}, true
	}
	if metric, tail, ok := strings.Cut(rest, " "); ok && strings.HasPrefix(tail, "is absent") {
		return Starved{Result: name, Metric: metric}, true
	}
	return Starved{}, false
}

// FoldGaps folds what r could not measure into one gap per source, in the order the results first name them
// (then the results the run did not include): each result not measured under the source of its first
// out-of-reach signal (else of its reason), each signal out of reach and each absent metric under its own, and
// each rule not evaluated under the gap of the result or metric that starved it (starved by rule ID; a rule
// missing from it is read from its reason). sources nil is DefaultGapSource.
func FoldGaps(r *Report, sources GapSources, starved map[string]Starved) []Gap {
	if sources == nil {
		sources = DefaultGapSource
	}
	var gaps []Gap
	idx := map[string]int{}
	signals := []map[string][]string{} // per gap: signal -> results
	var order [][]string               // per gap: signals in first-seen order
	gapOf := func(k GapKey) int {
		if k.Source == "" {
			k.Source = "reason:" + normalise(k.Reason)
		}
		if k.Title == "" {
			k.Title = "not measured"
		}
		if k.Reason == "" {
			k.Reason = "no reason given"
		}
		i, ok := idx[k.Source]
		if !ok {
			i = len(gaps)
			idx[k.Source] = i
			gaps = append(gaps, Gap{Source: k.Source, Title: k.Title, Reason: k.Reason, Fix: k.Fix})
			signals = append(signals, map[string][]string{})
			order = append(order, nil)
		}
		return i
	}
	addSignal := func(i int, signal, res string) {
		rs, seen := signals[i][signal]
		if !seen {
			order[i] = append(order[i], signal)
		}
		if !contains(rs, res) {
			signals[i][signal] = append(rs, res)
		}
	}
	// place puts an entry under its source (and its Via), and returns its gap.
	place := func(e GapEntry, signal string) int {
		k := sources(e)
		i := gapOf(k)
		if k.Via != nil {
			v := gapOf(*k.Via)
			addSignal(v, k.Title, e.Result)
		}
		if signal != "" {
			addSignal(i, signal, e.Result)
		}
		return i
	}
	resultGap := map[string]int{}
	absentGap := map[string]int{}
	for _, res := range r.Results {
		if !res.Status.Measured() {
			e := GapEntry{Result: res.Name, Status: res.Status, Reason: res.Reason}
			signal := ""
			if len(res.OutOfReach) > 0 {
				e.OutOfReach = &res.OutOfReach[0]
				signal = res.OutOfReach[0].Signal
			}
			i := place(e, signal)
			gaps[i].Measurements = appendNew(gaps[i].Measurements, res.Name)
			resultGap[res.Name] = i
		}
		for j := range res.OutOfReach {
			if j == 0 && !res.Status.Measured() {
				continue
			}
			o := &res.OutOfReach[j]
			place(GapEntry{Result: res.Name, Status: res.Status, OutOfReach: o}, o.Signal)
		}
		for j := range res.Absent {
			a := &res.Absent[j]
			absentGap[res.Name+"\x00"+a.Metric] = place(GapEntry{Result: res.Name, Status: res.Status, Absence: a}, a.Metric)
		}
	}
	for _, e := range r.Rules {
		if e.Status != RuleNotEvaluated {
			continue
		}
		s, ok := starved[e.ID]
		if !ok {
			s, ok = StarvedFromReason(e.Reason)
		}
		i, found := -1, false
		if ok {
			if s.Metric != "" {
				i, found = absentGap[s.Result+"\x00"+s.Metric]
			}
			if !found {
				i, found = resultGap[s.Result]
			}
			if !found && r.Result(s.Result) == nil {
				i, found = gapOf(GapKey{Source: SourceNotRun, Title: "measurements this run did not include",
					Reason: "not part of this run: `kubeslow bench` runs them, or --only/--skip left them out",
					Fix:    "`kubeslow bench --help` lists the benches; a measurement --only or --skip left out runs without them"}), true
				gaps[i].Measurements = appendNew(gaps[i].Measurements, s.Result)
			}
		}
		if !found {
			i = gapOf(DefaultGapSource(GapEntry{Reason: e.Reason}))
		}
		gaps[i].Rules = appendNew(gaps[i].Rules, e.ID)
	}
	for i := range gaps {
		for _, sig := range order[i] {
			gaps[i].Signals = append(gaps[i].Signals, fmt.Sprintf("%s [%s]", sig, strings.Join(signals[i][sig], ", ")))
		}
	}
	return gaps
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func appendNew(l []string, s string) []string {
	if contains(l, s) {
		return l
	}
	return append(l, s)
}

// FoldedGaps are r's gaps: those it carries, else folded from its results and rules by DefaultGapSource (a
// report written before gaps were, or by a command that does not fold them).
func (r *Report) FoldedGaps() []Gap {
	if len(r.Gaps) > 0 {
		return r.Gaps
	}
	return FoldGaps(r, nil, nil)
}

// Detail is the gap's reason without a leading copy of its title (a title read from the reason's first clause),
// so that a report says the clause once: "title: detail", or the title alone when the reason was one clause.
func (g Gap) Detail() string {
	d := strings.TrimSpace(g.Reason)
	if !strings.HasPrefix(d, g.Title) {
		return d
	}
	d = strings.TrimSpace(strings.TrimPrefix(d, g.Title))
	for _, sep := range []string{":", ";"} {
		d = strings.TrimSpace(strings.TrimPrefix(d, sep))
	}
	return d
}

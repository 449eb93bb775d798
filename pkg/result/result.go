// Package result is kubeslow's report schema, shared by every measurement, check and renderer: data, its validation
// and how its numbers read (FormatValue, FormatQuantity, FormatLabels).
//
// The JSON form is versioned by APIVersion. Additive changes keep the version; renaming or removing a field,
// or changing a field's meaning, bumps it.
package result

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// APIVersion and Kind identify the JSON document.
const (
	APIVersion = "kubeslow.dev/v1alpha1"
	Kind       = "Report"
)

// Report is one run of kubeslow against one cluster.
type Report struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	RunID      string    `json:"runID"`
	Tool       Tool      `json:"tool"`
	Cluster    Cluster   `json:"cluster"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	// Results holds one entry per measurement or check that was attempted, including skipped and failed ones.
	Results []Result `json:"results"`
	// Findings are the named causes, each resting on numbers from Results.
	Findings []Finding `json:"findings"`
	// Rules says, for every rule of the findings engine, whether it fired, was clear, or could not be
	// evaluated because its inputs were not measured.
	Rules []RuleEvaluation `json:"rules,omitempty"`
	// Gaps say what could not be measured once per source (etcd's metrics, the audit log, the agent image...),
	// each with the measurements, signals and rules it held back: a view folded from Results and Rules
	// (FoldGaps), which keep their own entries.
	Gaps []Gap `json:"gaps,omitempty"`
}

// RuleEvaluation is the outcome of one rule.
type RuleEvaluation struct {
	ID     string     `json:"id"`
	Status RuleStatus `json:"status"`
	Reason string     `json:"reason,omitempty"`
}

// RuleStatus is what a rule's evaluation came to.
type RuleStatus string

const (
	// RuleFired: the rule's condition held; its finding is in Findings.
	RuleFired RuleStatus = "fired"
	// RuleClear: the rule's inputs were measured and its condition did not hold.
	RuleClear RuleStatus = "clear"
	// RuleNotEvaluated: an input was not measured (Reason says which); this is not a pass.
	RuleNotEvaluated RuleStatus = "not-evaluated"
)

// Valid reports whether s is one of the defined rule statuses.
func (s RuleStatus) Valid() bool {
	return s == RuleFired || s == RuleClear || s == RuleNotEvaluated
}

// Tool identifies the kubeslow build that produced a report.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
}

// Cluster identifies the cluster a report is about.
type Cluster struct {
	// Name is the kubeconfig context (or "lab").
	Name string `json:"name"`
	// Server is the apiserver URL.
	Server string `json:"server"`
	// UID is the kube-system namespace's UID: stable for a cluster's lifetime, so runs can be matched.
	UID string `json:"uid,omitempty"`
	// Version is the apiserver's gitVersion.
	Version string `json:"version,omitempty"`
	// Lab is true when the cluster is kubeslow's own local lab.
	Lab bool `json:"lab,omitempty"`
	// Nodes counts nodes by kind ("real", "kwok") and readiness.
	Nodes NodeCounts `json:"nodes"`
	// Facts are discovered properties (CNI, kube-proxy mode, DNS deployment, managed or not...).
	Facts map[string]string `json:"facts,omitempty"`
}

// NodeCounts summarises the nodes of a cluster.
type NodeCounts struct {
	Total int `json:"total"`
	Ready int `json:"ready"`
	// Simulated counts kwok (fake) nodes.
	Simulated int `json:"simulated,omitempty"`
}

// Status is the outcome of one measurement. Error and Skip mean "could not measure"; Pass, Warn and Fail
// mean "measured" with a verdict.
type Status string

const (
	StatusPass  Status = "Pass"
	StatusWarn  Status = "Warn"
	StatusFail  Status = "Fail"
	StatusSkip  Status = "Skip"
	StatusError Status = "Error"
)

// Measured reports whether the status carries a measurement (as opposed to skip/error).
func (s Status) Measured() bool { return s == StatusPass || s == StatusWarn || s == StatusFail }

// Valid reports whether s is one of the defined statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPass, StatusWarn, StatusFail, StatusSkip, StatusError:
		return true
	}
	return false
}

// Result is what one measurement produced.
type Result struct {
	// Name is the measurement's stable name, e.g. "pods.startup".
	Name string `json:"name"`
	// Status is the verdict, or why there is none (Skip/Error).
	Status Status `json:"status"`
	// Reason explains Skip, Error, Warn and Fail; optional for Pass.
	Reason string    `json:"reason,omitempty"`
	Start  time.Time `json:"start,omitzero"`
	End    time.Time `json:"end,omitzero"`
	// Metrics are the numbers, each with its unit and labels.
	Metrics []Metric `json:"metrics,omitempty"`
	// Records are per-item details (per pod, per node, per client...).
	Records []Record `json:"records,omitempty"`
	// Series are time series (latency over time, rates per minute...).
	Series []Series `json:"series,omitempty"`
	// Absent lists metrics the measurement could not take from its source (a series the Prometheus it read
	// does not have): a rule reading one of them is "not evaluated", never "clear".
	Absent []Absence `json:"absent,omitempty"`
	// OutOfReach lists the signals the measurement could not read on this cluster (etcd's disk behind a
	// managed control plane, an audit log nobody named, a 403 on /metrics), each with why and the fix: missing
	// is never healthy, and a reader sees what the verdict does not cover.
	OutOfReach []OutOfReach `json:"outOfReach,omitempty"`
	// Load lists what kubeslow ran during an observation's window (Start to End): its benchmarks, each with
	// its own span, so that the observed figures are read against the load; empty when the window saw none.
	Load []Span `json:"load,omitempty"`
	// Observed is true for an observation of the cluster over its window (Start to End), with Load the
	// load that ran in it.
	Observed bool `json:"observed,omitempty"`
}

// Absence is a metric a result does not hold because its source lacks the series it is computed from.
type Absence struct {
	// Metric is the result metric that is missing; Series the source series it needs.
	Metric string `json:"metric"`
	Series string `json:"series"`
	Reason string `json:"reason,omitempty"`
}

// OutOfReach is one signal a measurement could not read: what it is, why it was out of reach (a managed
// control plane, a 127.0.0.1 bind with no agent on the control-plane nodes, audit off, a 403), and the exact
// fix (a flag, an RBAC rule, a cloud's log switch).
type OutOfReach struct {
	Signal string `json:"signal"`
	Why    string `json:"why"`
	Fix    string `json:"fix"`
	// Source is the stable key of the source the signal comes from ("etcd-metrics", "audit-log", ...): the
	// report's gaps fold every entry of one source into one (Gap.Source).
	Source string `json:"source,omitempty"`
}

// Span is one named interval, e.g. a benchmark that ran during an observation.
type Span struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Metric is one number.
type Metric struct {
	Name   string            `json:"name"`
	Unit   string            `json:"unit"`
	Value  float64           `json:"value"`
	Labels map[string]string `json:"labels,omitempty"`
	// Bounds, when set, says Value is an estimate: a quantile interpolated within one bucket of a histogram,
	// so the true value lies between Bounds.Lower and Bounds.Upper (the bucket's edges).
	Bounds *Bounds `json:"bounds,omitempty"`
}

// Bounds are the edges of the histogram bucket an estimated quantile was interpolated in.
type Bounds struct {
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
	// Unbounded is set when the bucket has no edge on one side (JSON has no infinity): "upper" for the +Inf
	// bucket (the true value is at least Lower; Value and Upper repeat it, as histogram_quantile returns the
	// highest finite bound), "lower" for a first bucket whose upper edge is <= 0 (the true value is at most
	// Upper).
	Unbounded string `json:"unbounded,omitempty"`
}

// Record is one item's details: a pod's timeline, a client's request counts.
type Record struct {
	// ID names the item, e.g. "namespace/pod".
	ID     string               `json:"id"`
	Labels map[string]string    `json:"labels,omitempty"`
	Values map[string]float64   `json:"values,omitempty"`
	Times  map[string]time.Time `json:"times,omitempty"`
}

// Series is a time series of one quantity.
type Series struct {
	Name   string            `json:"name"`
	Unit   string            `json:"unit"`
	Labels map[string]string `json:"labels,omitempty"`
	Points []Point           `json:"points"`
	// Marks are notable instants (change points, fault injection...).
	Marks []Mark `json:"marks,omitempty"`
}

// Point is one sample of a Series.
type Point struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// Mark labels an instant of a Series.
type Mark struct {
	T     time.Time `json:"t"`
	Label string    `json:"label"`
}

// Severity ranks findings; higher is worse.
type Severity string

const (
	SeverityInfo     Severity = "info"
	SeverityWarning  Severity = "warning"
	SeverityError    Severity = "error"
	SeverityCritical Severity = "critical"
)

// Rank orders severities (info=1 .. critical=4); unknown severities rank 0.
func (s Severity) Rank() int {
	switch s {
	case SeverityInfo:
		return 1
	case SeverityWarning:
		return 2
	case SeverityError:
		return 3
	case SeverityCritical:
		return 4
	}
	return 0
}

// ParseSeverity accepts the lower-case severity names.
func ParseSeverity(s string) (Severity, error) {
	sv := Severity(s)
	if sv.Rank() == 0 {
		return "", fmt.Errorf("unknown severity %q (want info, warning, error or critical)", s)
	}
	return sv, nil
}

// Finding is a named cause: what is wrong, the numbers it rests on, the threshold and its source, and the fix.
type Finding struct {
	// ID is stable across versions, e.g. "KS-ETCD-001".
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Title    string   `json:"title"`
	// Summary is the one-line statement with the evidence filled in.
	Summary   string     `json:"summary"`
	Evidence  []Evidence `json:"evidence"`
	Threshold Threshold  `json:"threshold"`
	// Remediation says what to change.
	Remediation string `json:"remediation"`
	// Cases lists the field cases (A..E of the project's case book) this finding matches.
	Cases []string `json:"cases,omitempty"`
	// Results names the results the evidence comes from.
	Results []string `json:"results,omitempty"`
	// Items are the things the rule fired on (paths, nodes, resources, clients), worst first: one finding
	// per cause, whatever the number of items. Summary and Evidence are the first (worst) item's. At most
	// MaxItems are listed; ItemCount counts them all.
	Items []Item `json:"items,omitempty"`
	// ItemCount is how many items the rule fired on (more than len(Items) when the list was cut).
	ItemCount int `json:"itemCount,omitempty"`
	// ExplainedBy is the ID of a finding of the same report whose cause explains this one (its severity is
	// then info): e.g. a pod start-up phase that is slow because the control plane is out of CPU.
	ExplainedBy string `json:"explainedBy,omitempty"`
	// NoCause is said of a symptom (a finding whose rule names causes that could explain it) when none of its
	// causes fired: "no cause found among the measured signals", with the causes that were clear or could not
	// be evaluated.
	NoCause string `json:"noCause,omitempty"`
	// SeenAlso are the findings of other rules that saw this finding's cause from another source (the audit
	// log's 409s of one client beside the apiserver's 409 counters): one cause, one finding, each source listed.
	SeenAlso []SeenAlso `json:"seenAlso,omitempty"`
}

// SeenAlso is another source's view of a finding's cause: the rule that saw it, its summary and evidence.
type SeenAlso struct {
	ID       string     `json:"id"`
	Title    string     `json:"title"`
	Summary  string     `json:"summary"`
	Evidence []Evidence `json:"evidence,omitempty"`
	Results  []string   `json:"results,omitempty"`
}

// MaxItems is how many items a finding lists; the rest are counted in ItemCount.
const MaxItems = 50

// Item is one thing a rule fired on.
type Item struct {
	// Key names the item by its labels (e.g. "conn=new path=pod->Service", "node=n7"); stable between runs,
	// so two reports can be compared item by item. Empty when the rule reads one global number.
	Key string `json:"key"`
	// Value is the item's number that crossed the threshold, in the threshold's unit.
	Value float64 `json:"value"`
	// Summary is the rule's summary for this item.
	Summary string `json:"summary"`
}

// Evidence is one number a finding rests on.
type Evidence struct {
	Name   string            `json:"name"`
	Value  float64           `json:"value"`
	Unit   string            `json:"unit"`
	Labels map[string]string `json:"labels,omitempty"`
	// Result is the name of the Result the number was taken from.
	Result string `json:"result,omitempty"`
	// Bounds are the metric's, when its value is a quantile estimated within a histogram bucket.
	Bounds *Bounds `json:"bounds,omitempty"`
}

// Threshold is the line that was crossed and where it comes from.
type Threshold struct {
	// Op is the comparison that makes a finding: ">", ">=", "<", "<=".
	Op    string  `json:"op"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Source names where the threshold comes from (an SLO, a project's documentation, a kernel default).
	Source string `json:"source"`
}

// Validate checks the invariants renderers and consumers rely on.
func (r *Report) Validate() error {
	if r.APIVersion != APIVersion || r.Kind != Kind {
		return fmt.Errorf("not a kubeslow report: apiVersion %q kind %q (want %q %q)", r.APIVersion, r.Kind, APIVersion, Kind)
	}
	for i, res := range r.Results {
		if res.Name == "" {
			return fmt.Errorf("results[%d]: empty name", i)
		}
		if !res.Status.Valid() {
			return fmt.Errorf("result %q: invalid status %q", res.Name, res.Status)
		}
		if (res.Status == StatusSkip || res.Status == StatusError) && res.Reason == "" {
			return fmt.Errorf("result %q: status %s needs a reason", res.Name, res.Status)
		}
		for j, o := range res.OutOfReach {
			if o.Signal == "" || o.Why == "" || o.Fix == "" {
				return fmt.Errorf("result %q: outOfReach[%d] needs a signal, why and fix: %+v", res.Name, j, o)
			}
		}
		for _, m := range res.Metrics {
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				return fmt.Errorf("result %q: metric %q is not finite", res.Name, m.Name)
			}
			if b := m.Bounds; b != nil && (math.IsNaN(b.Lower) || math.IsInf(b.Lower, 0) || math.IsNaN(b.Upper) || math.IsInf(b.Upper, 0) || b.Lower > b.Upper) {
				return fmt.Errorf("result %q: metric %q has bounds %v..%v", res.Name, m.Name, b.Lower, b.Upper)
			}
		}
	}
	for i, e := range r.Rules {
		if e.ID == "" || !e.Status.Valid() {
			return fmt.Errorf("rules[%d]: id %q status %q", i, e.ID, e.Status)
		}
	}
	for i, g := range r.Gaps {
		if g.Source == "" || g.Title == "" || g.Reason == "" {
			return fmt.Errorf("gaps[%d]: needs a source, title and reason: %+v", i, g)
		}
	}
	for i, f := range r.Findings {
		if f.ID == "" || f.Title == "" {
			return fmt.Errorf("findings[%d]: id and title are required", i)
		}
		if f.Severity.Rank() == 0 {
			return fmt.Errorf("finding %s: invalid severity %q", f.ID, f.Severity)
		}
		if len(f.Evidence) == 0 {
			return fmt.Errorf("finding %s: no evidence", f.ID)
		}
		if f.Threshold.Source == "" {
			return fmt.Errorf("finding %s: threshold has no source", f.ID)
		}
		if f.Remediation == "" {
			return fmt.Errorf("finding %s: no remediation", f.ID)
		}
		if f.ItemCount < len(f.Items) {
			return fmt.Errorf("finding %s: itemCount %d below its %d items", f.ID, f.ItemCount, len(f.Items))
		}
	}
	return nil
}

// Result returns the named result, or nil.
func (r *Report) Result(name string) *Result {
	for i := range r.Results {
		if r.Results[i].Name == name {
			return &r.Results[i]
		}
	}
	return nil
}

// SelfPrefix starts the names of results about kubeslow itself (its own overhead), which are not
// measurements of the cluster and are left out of Tally.
const SelfPrefix = "kubeslow."

// Tally counts a report's measurements of the cluster by outcome.
type Tally struct {
	// Ran produced a measurement (Pass, Warn, Fail); Skipped and Errored did not.
	Ran, Skipped, Errored int
}

// Tally counts r's results, leaving out those about kubeslow itself.
func (r *Report) Tally() Tally {
	var t Tally
	for _, res := range r.Results {
		switch {
		case strings.HasPrefix(res.Name, SelfPrefix):
		case res.Status.Measured():
			t.Ran++
		case res.Status == StatusSkip:
			t.Skipped++
		default:
			t.Errored++
		}
	}
	return t
}

// String is the report's summary line: "4 measurements ran, 1 skipped, 1 errored".
func (t Tally) String() string {
	return fmt.Sprintf("%d measurements ran, %d skipped, %d errored", t.Ran, t.Skipped, t.Errored)
}

// Metric returns the first metric with the given name whose labels include all of match, or nil.
func (r *Result) Metric(name string, match map[string]string) *Metric {
	for i := range r.Metrics {
		m := &r.Metrics[i]
		if m.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if m.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

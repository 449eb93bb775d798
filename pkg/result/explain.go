package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"
)

// The Explanation document (`kubeslow explain -o json`) is versioned on its own: ExplanationAPIVersion changes
// when a field of it is renamed, removed or changes meaning, whatever the Report's APIVersion does. Additive
// changes keep the version.
const (
	ExplanationAPIVersion = "kubeslow.dev/v1alpha1"
	ExplanationKind       = "Explanation"
)

// Step precisions: the finest unit a step's seconds can be trusted to.
const (
	PrecisionSecond      = "1s"  // conditions, container times, creationTimestamp, core/v1 Event timestamps
	PrecisionMillisecond = "1ms" // the kubelet's pull durations (Go durations truncated to ms in its message)
	PrecisionMicrosecond = "1us" // events.k8s.io eventTime (the scheduler's, for instance)
)

// Step statuses.
const (
	StepDone        = "done"         // both ends are known
	StepPending     = "pending"      // started, not finished when read
	StepUnknown     = "unknown"      // its source holds no time (a condition the node does not set)
	StepNotMeasured = "not-measured" // kubeslow cannot read it without creating something (Note says where it is measured)
)

// Explanation is why one workload's pods took the time they took to start: each pod's timeline, the verdicts
// (Findings, the longest phase's first) and what could not be read.
type Explanation struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Tool       Tool   `json:"tool"`
	// Context is the kubeconfig context the objects were read from.
	Context string `json:"context,omitempty"`
	// Target is the object asked about.
	Target ExplainTarget `json:"target"`
	// Read is when kubeslow read the objects.
	Read time.Time `json:"read"`
	// Pods are the timelines, slowest first.
	Pods []PodTimeline `json:"pods"`
	// Workload is the view across the pods of a rollout or Job (nil for one pod).
	Workload *WorkloadView `json:"workload,omitempty"`
	// Verdicts name the cause of each long phase, the longest first, with the evidence, threshold and fix.
	Verdicts []Finding `json:"verdicts"`
	// OutOfReach lists what could not be read (Events forbidden or expired, EndpointSlices forbidden, DNS).
	OutOfReach []OutOfReach `json:"outOfReach,omitempty"`
}

// ExplainTarget is the object explained and which of its pods were taken.
type ExplainTarget struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Selection says which pods: "the pod", "ReplicaSet web-5d8f (revision 3)", "all 12 pods (--all-pods)".
	Selection string `json:"selection"`
}

// PodTimeline is one pod's start-up, step by step.
type PodTimeline struct {
	Name    string    `json:"name"`
	Node    string    `json:"node,omitempty"`
	Created time.Time `json:"created"`
	// Ready is true when the pod's Ready condition is True.
	Ready bool `json:"ready"`
	// Seconds is created → Ready (or → the last step that ended, while the pod is not Ready).
	Seconds float64 `json:"seconds"`
	// Restarts is the sum of its containers' restartCount.
	Restarts int `json:"restarts,omitempty"`
	// Steps are in order: the phases (scheduling, sandbox, init:NAME, start, readiness, endpoints, dns) each
	// from the end of the previous; a pull (pull:IMAGE) lies within the phase named by its Within.
	Steps  []Step         `json:"steps"`
	Events EventsCoverage `json:"events"`
}

// Step is one step of a pod's start-up.
type Step struct {
	// Name: scheduling, sandbox, init:NAME, pull:IMAGE, start, readiness, endpoints, dns.
	Name   string    `json:"name"`
	Start  time.Time `json:"start,omitzero"`
	End    time.Time `json:"end,omitzero"`
	Status string    `json:"status"`
	// Seconds is End − Start (0 when either is unknown).
	Seconds float64 `json:"seconds"`
	// Source names where the ends come from ("creationTimestamp → condition PodScheduled").
	Source string `json:"source"`
	// Precision is the precision of Seconds: PrecisionSecond, PrecisionMillisecond or PrecisionMicrosecond.
	Precision string `json:"precision"`
	// Within names the phase a sub-step (an image pull) lies in; empty for a phase.
	Within string `json:"within,omitempty"`
	// UpperBound: End is the latest the step can have ended (an EndpointSlice's own last write).
	UpperBound bool `json:"upperBound,omitempty"`
	// Values are the step's numbers: pull_seconds, waiting_seconds, image_bytes, bytes_per_second,
	// initial_delay_seconds, period_seconds, probe_failures, cpu_limit_cores, restarts, exit_code…
	Values map[string]float64 `json:"values,omitempty"`
	// Details are its words: image, container, reason, node…
	Details map[string]string `json:"details,omitempty"`
	// Events are the Events that explain the step (FailedScheduling, Unhealthy…), one per Event object.
	Events []StepEvent `json:"events,omitempty"`
	// Note says what the step's figure means or lacks.
	Note string `json:"note,omitempty"`
}

// StepEvent is one Event object about a step.
type StepEvent struct {
	Reason  string    `json:"reason"`
	Type    string    `json:"type,omitempty"`
	Count   int       `json:"count"`
	First   time.Time `json:"first,omitzero"`
	Last    time.Time `json:"last,omitzero"`
	Message string    `json:"message"`
	// Precision of First and Last: 1us for events.k8s.io eventTime, 1s for core/v1 timestamps.
	Precision string `json:"precision"`
}

// EventsCoverage says how much of a pod's start-up its Events still cover.
type EventsCoverage struct {
	Readable bool `json:"readable"`
	Count    int  `json:"count"`
	// Oldest is the first time of the oldest Event found for the pod.
	Oldest time.Time `json:"oldest,omitzero"`
	// LostSeconds is the span of the start-up before Oldest (or all of it, with no Event) that the
	// apiserver's --event-ttl has expired; 0 when nothing is lost.
	LostSeconds float64 `json:"lostSeconds,omitempty"`
	// FromConditionsOnly lists the steps of the lost span: read from conditions and container statuses alone.
	FromConditionsOnly []string `json:"fromConditionsOnly,omitempty"`
	Note               string   `json:"note,omitempty"`
}

// WorkloadView is a rollout's or Job's view across its pods.
type WorkloadView struct {
	Pods  int `json:"pods"`
	Ready int `json:"ready"`
	// Phases are the phases' spread across the pods, in timeline order.
	Phases []PhaseSpread `json:"phases"`
	// Dominant is the phase holding the largest share of the pods' summed start-up time.
	Dominant string `json:"dominant,omitempty"`
	// Slowest are the slowest pods (at most 5), slowest first.
	Slowest []SlowPod `json:"slowest"`
	// Job is the whole-Job view (nil for other kinds).
	Job *JobView `json:"job,omitempty"`
}

// PhaseSpread is one phase across pods.
type PhaseSpread struct {
	Name          string  `json:"name"`
	Pods          int     `json:"pods"`
	MedianSeconds float64 `json:"medianSeconds"`
	MaxSeconds    float64 `json:"maxSeconds"`
	MaxPod        string  `json:"maxPod"`
	// Share is the phase's part of the pods' summed start-up time (0..1).
	Share float64 `json:"share"`
}

// SlowPod is one of a workload's slowest pods.
type SlowPod struct {
	Name    string  `json:"name"`
	Node    string  `json:"node,omitempty"`
	Seconds float64 `json:"seconds"`
	// Phase is its longest phase.
	Phase string `json:"phase"`
}

// JobView is a Job as a whole: created → all pods Running → all pods Ready.
type JobView struct {
	Created    time.Time `json:"created"`
	AllRunning time.Time `json:"allRunning,omitzero"`
	AllReady   time.Time `json:"allReady,omitzero"`
	// ToRunningSeconds and ToReadySeconds are from Created (0 when not reached).
	ToRunningSeconds float64 `json:"toRunningSeconds"`
	ToReadySeconds   float64 `json:"toReadySeconds"`
	Note             string  `json:"note,omitempty"`
}

// Validate checks what consumers of an Explanation rely on.
func (e *Explanation) Validate() error {
	if e.APIVersion != ExplanationAPIVersion || e.Kind != ExplanationKind {
		return fmt.Errorf("not a kubeslow explanation: apiVersion %q kind %q (want %q %q)", e.APIVersion, e.Kind, ExplanationAPIVersion, ExplanationKind)
	}
	if e.Target.Kind == "" || e.Target.Name == "" {
		return fmt.Errorf("explanation: target kind and name are required")
	}
	for _, p := range e.Pods {
		for _, s := range p.Steps {
			if s.Name == "" || s.Source == "" {
				return fmt.Errorf("pod %s: a step needs a name and a source: %+v", p.Name, s)
			}
			switch s.Precision {
			case PrecisionSecond, PrecisionMillisecond, PrecisionMicrosecond:
			default:
				return fmt.Errorf("pod %s step %s: precision %q", p.Name, s.Name, s.Precision)
			}
			switch s.Status {
			case StepDone, StepPending, StepUnknown, StepNotMeasured:
			default:
				return fmt.Errorf("pod %s step %s: status %q", p.Name, s.Name, s.Status)
			}
			if math.IsNaN(s.Seconds) || math.IsInf(s.Seconds, 0) || s.Seconds < 0 {
				return fmt.Errorf("pod %s step %s: seconds %v", p.Name, s.Name, s.Seconds)
			}
			for k, v := range s.Values {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("pod %s step %s: value %s is not finite", p.Name, s.Name, k)
				}
			}
		}
	}
	for i, o := range e.OutOfReach {
		if o.Signal == "" || o.Why == "" || o.Fix == "" {
			return fmt.Errorf("outOfReach[%d] needs a signal, why and fix: %+v", i, o)
		}
	}
	// The verdicts are findings: the same invariants as a report's.
	r := Report{APIVersion: APIVersion, Kind: Kind, Findings: e.Verdicts}
	return r.Validate()
}

// EncodeExplanation writes e as indented JSON; it refuses an Explanation that fails Validate.
func EncodeExplanation(w io.Writer, e *Explanation) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("invalid explanation: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(e); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// DecodeExplanation reads an Explanation written by EncodeExplanation; unknown fields are rejected.
func DecodeExplanation(rd io.Reader) (*Explanation, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var e Explanation
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("decoding explanation: %w", err)
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return &e, nil
}

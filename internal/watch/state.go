package watch

import (
	"sort"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// FindingState is one finding as the watch tracks it across cycles.
type FindingState struct {
	ID       string          `json:"id"`
	Severity result.Severity `json:"severity"`
	// Cause is the ID of the finding this one is folded under (its ExplainedBy); empty for a cause.
	Cause     string `json:"cause,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Node      string `json:"node,omitempty"`
	// Streak counts the consecutive cycles that reached the cluster and had this finding.
	Streak int  `json:"streak"`
	Firing bool `json:"firing"`
}

type findingKey struct{ id, namespace, pod, node string }

// tracker is the hysteresis: a finding fires once it held for `need` consecutive cycles and is forgotten
// after the first cycle without it.
type tracker struct {
	need  int
	state map[findingKey]*FindingState
}

func newTracker(need int) *tracker {
	return &tracker{need: max(need, 1), state: map[findingKey]*FindingState{}}
}

// where is the namespace, pod and node a finding is about: the first evidence that carries each label.
func where(f result.Finding) (ns, pod, node string) {
	for _, e := range f.Evidence {
		if ns == "" {
			ns = e.Labels["namespace"]
		}
		if pod == "" {
			pod = e.Labels["pod"]
		}
		if node == "" {
			node = e.Labels["node"]
		}
	}
	return ns, pod, node
}

// observe takes one cycle's findings: those seen again extend their streak, new ones start at 1, the rest
// clear.
func (t *tracker) observe(fs []result.Finding) {
	seen := map[findingKey]bool{}
	for _, f := range fs {
		ns, pod, node := where(f)
		k := findingKey{f.ID, ns, pod, node}
		if seen[k] {
			continue // one cycle counts once
		}
		seen[k] = true
		s := t.state[k]
		if s == nil {
			s = &FindingState{ID: f.ID, Namespace: ns, Pod: pod, Node: node}
			t.state[k] = s
		}
		s.Severity, s.Cause = f.Severity, f.ExplainedBy
		s.Streak++
		s.Firing = s.Streak >= t.need
	}
	for k := range t.state {
		if !seen[k] {
			delete(t.state, k)
		}
	}
}

// reset forgets every streak: the evidence is stale.
func (t *tracker) reset() { clear(t.state) }

func (t *tracker) sorted() []FindingState {
	out := make([]FindingState, 0, len(t.state))
	for _, s := range t.state {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return a.Node < b.Node
	})
	return out
}

func (t *tracker) firing() []FindingState {
	var out []FindingState
	for _, s := range t.sorted() {
		if s.Firing {
			out = append(out, s)
		}
	}
	return out
}

func (t *tracker) firingCount() int {
	n := 0
	for _, s := range t.state {
		if s.Firing {
			n++
		}
	}
	return n
}

// summaries are at most n of the tracked findings, firing first.
func (t *tracker) summaries(n int) []FindingState {
	all := t.sorted()
	sort.SliceStable(all, func(i, j int) bool { return all[i].Firing && !all[j].Firing })
	if len(all) > n {
		all = all[:n]
	}
	return all
}

package measure

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// Where a benchmark's pods go and how many fit is decided from what the cluster says (its nodes, their
// allocatable pods, the pods already on them), never from what kubeslow knows of its own lab: the same run
// given only a kubeconfig must place its load the same way.

// Target says which nodes a benchmark's pods may use.
type Target int

const (
	// PreferSimulated places the load on kwok's simulated nodes where the cluster has some with room (their
	// pods cost the cluster's machines nothing and measure the control plane alone), else on the real ones.
	PreferSimulated Target = iota
	// RealOnly places the load on real nodes (kubelet, runtime, CNI are part of what is measured).
	RealOnly
)

// The share of the free pod slots a load leaves free (at least one slot): on real nodes other tenants' pods,
// DaemonSet pods and kubeslow's own helper pods need room while it runs; simulated nodes have no tenants
// but kubeslow, only pods that arrive meanwhile.
const (
	FitMarginReal      = 0.1
	FitMarginSimulated = 0.01
)

// PerNodeCountMax is the most nodes whose pods are counted with one LIST each (spec.nodeName, served from
// the apiserver's watch cache through its node index), and only when they are at most a quarter of the
// cluster's nodes; else the pods are counted with one paginated LIST of every non-terminated pod. Measured on
// the lab (21 nodes, few pods): 21 per-node LISTs took 33 ms, the one LIST 1.6 ms: a request's fixed cost
// dominates until the one LIST carries mostly other nodes' pods.
const PerNodeCountMax = 32

// NodeRoom is a node the load may use: its allocatable pods and its non-terminated pods.
type NodeRoom struct {
	Name        string
	Allocatable int
	Used        int
}

// Free is how many more pods the node takes.
func (n NodeRoom) Free() int { return max(0, n.Allocatable-n.Used) }

// Excluded is a node the load may not use, and why.
type Excluded struct {
	Name, Reason string
}

// Placement is where a benchmark's pods go: the nodes, what steers the pods there, and how many fit.
type Placement struct {
	// Simulated is true when the load goes to kwok's simulated nodes.
	Simulated bool
	// Nodes are the nodes the load may use, by name; Excluded those of the targeted kind it may not.
	Nodes    []NodeRoom
	Excluded []Excluded
	// NodeSelector, Affinity and Tolerations steer the pods onto Nodes and nowhere else.
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	Tolerations  []corev1.Toleration
	// Image is a pause image that every real node of Nodes already holds ("" when none does, or on
	// simulated nodes where nothing is pulled).
	Image string
	// Unchecked says why capacity could not be read ("": it was); Fit then trusts the request.
	Unchecked string
}

// Free is the pods the chosen nodes take.
func (p *Placement) Free() int {
	n := 0
	for _, r := range p.Nodes {
		n += r.Free()
	}
	return n
}

// Kind names the chosen nodes' kind ("simulated" or "real").
func (p *Placement) Kind() string {
	if p.Simulated {
		return "simulated"
	}
	return "real"
}

func (p *Placement) margin() float64 {
	if p.Simulated {
		return FitMarginSimulated
	}
	return FitMarginReal
}

// Fit returns how many of want pods to create: want when they fit in the free slots with a margin, else the
// free slots less the margin (FitMarginReal, FitMarginSimulated; 0 when nothing fits).
func (p *Placement) Fit(want int) int {
	if p.Unchecked != "" {
		return want
	}
	free := p.Free()
	room := free - max(1, int(float64(free)*p.margin()))
	return max(0, min(want, room))
}

// Limit says why a load of want pods was lowered to got: kubeslow's own limit, not the cluster's fault.
func (p *Placement) Limit(want, got int) string {
	return fmt.Sprintf("kubeslow's own limit: %d pods requested, %d fit on %d %s node(s) (%d free pod slots, %.0f%% kept free)",
		want, got, len(p.Nodes), p.Kind(), p.Free(), p.margin()*100)
}

// Describe is one line on the nodes chosen and left out, for progress and reports.
func (p *Placement) Describe() string {
	s := fmt.Sprintf("%d %s node(s), %d free pod slots", len(p.Nodes), p.Kind(), p.Free())
	if p.Unchecked != "" {
		s = fmt.Sprintf("%d %s node(s), capacity unchecked (%s)", len(p.Nodes), p.Kind(), p.Unchecked)
	}
	if len(p.Excluded) > 0 {
		why := map[string]int{}
		for _, e := range p.Excluded {
			why[e.Reason]++
		}
		var parts []string
		for r, n := range why {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
		sort.Strings(parts)
		s += "; left out: " + strings.Join(parts, ", ")
	}
	return s
}

// SimulatedToleration lets a pod onto the simulated nodes (their NoSchedule taint).
func SimulatedToleration() corev1.Toleration {
	return corev1.Toleration{Key: kube.SimulatedNodeTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
}

// Place lists the nodes (one paginated LIST), picks those of the targeted kind the load may use (Ready, not
// cordoned, no taint it does not tolerate, room for pods) and counts the pods on them. No permission to list
// nodes is a SkipError.
func Place(ctx context.Context, env *Env, t Target) (*Placement, error) {
	nodes, err := listNodes(ctx, env)
	if err != nil {
		return nil, err
	}
	var sim, real []*corev1.Node
	for _, n := range nodes {
		if kube.IsSimulated(n) {
			sim = append(sim, n)
		} else {
			real = append(real, n)
		}
	}
	if t == PreferSimulated && len(sim) > 0 {
		p, err := place(ctx, env, nodes, sim, true)
		if err != nil || p.Free() > 0 {
			return p, err
		}
		// No simulated node has room: the real nodes, if they have some.
		if q, err := place(ctx, env, nodes, real, false); err != nil || q.Free() > 0 || q.Unchecked != "" {
			return q, err
		}
		return p, nil
	}
	return place(ctx, env, nodes, real, false)
}

// PlaceOn is Place on the named nodes (a user's choice): each must exist and take the load's pods.
func PlaceOn(ctx context.Context, env *Env, names []string) (*Placement, error) {
	nodes, err := listNodes(ctx, env)
	if err != nil {
		return nil, err
	}
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var chosen []*corev1.Node
	simulated := 0
	for _, n := range names {
		node := byName[n]
		if node == nil {
			return nil, fmt.Errorf("node %s: not found", n)
		}
		if kube.IsSimulated(node) {
			simulated++
		}
		chosen = append(chosen, node)
	}
	if simulated > 0 && simulated < len(chosen) {
		return nil, fmt.Errorf("nodes %s: mixes simulated and real nodes", strings.Join(names, ","))
	}
	p, err := place(ctx, env, nodes, chosen, simulated > 0)
	if err != nil {
		return nil, err
	}
	if len(p.Excluded) > 0 {
		return nil, fmt.Errorf("node %s: %s: kubeslow's pods cannot be scheduled there", p.Excluded[0].Name, p.Excluded[0].Reason)
	}
	return p, nil
}

func listNodes(ctx context.Context, env *Env) ([]*corev1.Node, error) {
	l, err := env.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Node, len(l))
	for i := range l {
		out[i] = &l[i]
	}
	return out, nil
}

// place classifies candidates (all of one kind) and counts their pods; all are the cluster's nodes.
func place(ctx context.Context, env *Env, all, candidates []*corev1.Node, simulated bool) (*Placement, error) {
	p := &Placement{Simulated: simulated}
	if simulated {
		p.Tolerations = []corev1.Toleration{SimulatedToleration()}
	}
	chosen := map[string]bool{}
	var used []*corev1.Node
	for _, n := range candidates {
		if why := unusable(n, p.Tolerations); why != "" {
			p.Excluded = append(p.Excluded, Excluded{Name: n.Name, Reason: why})
			continue
		}
		used = append(used, n)
		chosen[n.Name] = true
		p.Nodes = append(p.Nodes, NodeRoom{Name: n.Name, Allocatable: int(n.Status.Allocatable.Pods().Value())})
	}
	sort.Slice(p.Nodes, func(i, j int) bool { return p.Nodes[i].Name < p.Nodes[j].Name })
	sort.Slice(p.Excluded, func(i, j int) bool { return p.Excluded[i].Name < p.Excluded[j].Name })
	p.steer(all, chosen)
	if !simulated {
		p.Image = PauseImage(used)
	}
	if len(p.Nodes) == 0 {
		return p, nil
	}
	counts, err := countPods(ctx, env, p.Nodes, len(all))
	if apierrors.IsForbidden(err) {
		p.Unchecked = "no permission to list the nodes' pods"
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("counting the nodes' pods: %w", err)
	}
	for i := range p.Nodes {
		p.Nodes[i].Used = counts[p.Nodes[i].Name]
	}
	return p, nil
}

// unusable says why the load's pods (with tolerations) cannot run on n ("": they can).
func unusable(n *corev1.Node, tolerations []corev1.Toleration) string {
	switch {
	case n.Spec.Unschedulable:
		return "cordoned"
	case !kube.NodeReady(n):
		return "not Ready"
	case n.Status.Allocatable.Pods().Value() <= 0:
		return "no allocatable pods"
	}
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		// The node lifecycle controller's own condition taints lag the condition: on a node that is Ready
		// they are about to be removed (a node just joined, or back from a blip), and the scheduler places the
		// pods as soon as they are.
		if lifecycleTaints[t.Key] {
			continue
		}
		if !tolerated(t, tolerations) {
			return "tainted " + t.ToString()
		}
	}
	return ""
}

// lifecycleTaints are the taints the node lifecycle controller keeps in step with a node's Ready condition.
var lifecycleTaints = map[string]bool{corev1.TaintNodeNotReady: true, corev1.TaintNodeUnreachable: true}

// tolerated reports whether one of ts tolerates taint (the scheduler's rule for Equal and Exists).
func tolerated(taint corev1.Taint, ts []corev1.Toleration) bool {
	for _, t := range ts {
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		if t.Key != "" && t.Key != taint.Key {
			continue
		}
		switch t.Operator {
		case corev1.TolerationOpExists:
			return true
		case corev1.TolerationOpEqual, "":
			if t.Key != "" && t.Value == taint.Value {
				return true
			}
		}
	}
	return false
}

// steer sets what keeps the pods on the chosen nodes: nothing when the scheduler could not put them anywhere
// else anyway; the simulated nodes' label when the chosen nodes carry it and no other node that would take
// the pods does; else node names (required node affinity on metadata.name, as DaemonSets pin their pods):
// in the chosen ones, or not in the others, whichever list is shorter.
func (p *Placement) steer(all []*corev1.Node, chosen map[string]bool) {
	// Nodes the scheduler would consider for the pods but that were not chosen.
	var stray []*corev1.Node
	for _, n := range all {
		if !chosen[n.Name] && unusable(n, p.Tolerations) == "" {
			stray = append(stray, n)
		}
	}
	if len(stray) == 0 || len(chosen) == 0 {
		return
	}
	if p.Simulated {
		labelled := true
		for _, n := range all {
			if chosen[n.Name] && n.Labels[kube.SimulatedNodeLabel] != kube.SimulatedNodeLabelValue {
				labelled = false
			}
		}
		for _, n := range stray {
			if n.Labels[kube.SimulatedNodeLabel] == kube.SimulatedNodeLabelValue {
				labelled = false
			}
		}
		if labelled {
			p.NodeSelector = map[string]string{kube.SimulatedNodeLabel: kube.SimulatedNodeLabelValue}
			return
		}
	}
	// The shorter list: in the chosen nodes, or not in the stray ones.
	req := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn}
	if len(stray) < len(chosen) {
		req.Operator = corev1.NodeSelectorOpNotIn
		for _, n := range stray {
			req.Values = append(req.Values, n.Name)
		}
	} else {
		for n := range chosen {
			req.Values = append(req.Values, n)
		}
	}
	sort.Strings(req.Values)
	p.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{req}}}}}}
}

// activePods selects the pods that hold a node's pod slot (the scheduler counts every pod bound to the node
// that has not terminated).
const activePods = "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)

// countPods counts the non-terminated pods on each of nodes (of the cluster's total): one LIST per node for a
// few of many nodes, else one paginated LIST of the cluster's non-terminated pods (see PerNodeCountMax).
func countPods(ctx context.Context, env *Env, nodes []NodeRoom, total int) (map[string]int, error) {
	counts := map[string]int{}
	pods := env.Client.CoreV1().Pods(metav1.NamespaceAll)
	if len(nodes) <= PerNodeCountMax && 4*len(nodes) <= total {
		res := make([]int, len(nodes))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(4)
		for i, n := range nodes {
			g.Go(func() error {
				// resourceVersion 0: the watch cache answers, through its spec.nodeName index.
				l, err := pods.List(gctx, metav1.ListOptions{ResourceVersion: "0",
					FieldSelector: "spec.nodeName=" + n.Name + "," + activePods})
				if err != nil {
					return err
				}
				res[i] = len(l.Items)
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		for i, n := range nodes {
			counts[n.Name] = res[i]
		}
		return counts, nil
	}
	want := map[string]bool{}
	for _, n := range nodes {
		want[n.Name] = true
	}
	opts := metav1.ListOptions{Limit: 500, FieldSelector: activePods}
	for {
		l, err := pods.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			if n := l.Items[i].Spec.NodeName; want[n] {
				counts[n]++
			}
		}
		if l.Continue == "" {
			return counts, nil
		}
		opts.Continue = l.Continue
	}
}

// PauseImage is a pause image every one of nodes already holds (node.status.images, a tagged name with
// "/pause:"; the greatest name when several are, so that the choice is stable); "" when none is on all.
func PauseImage(nodes []*corev1.Node) string {
	if len(nodes) == 0 {
		return ""
	}
	on := map[string]int{}
	for _, n := range nodes {
		seen := map[string]bool{}
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if strings.Contains(name, "/pause:") && !strings.Contains(name, "@") && !seen[name] {
					seen[name] = true
					on[name]++
				}
			}
		}
	}
	best := ""
	for name, c := range on {
		if c == len(nodes) && (best == "" || name > best) {
			best = name
		}
	}
	return best
}

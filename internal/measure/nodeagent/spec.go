package nodeagent

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares nodes.agent to the registry (internal/engine/catalogue): the node sweep with the run's image; its
// past-window twin is promwindow's agent measurement (node_exporter).
var Spec = measure.Spec{
	Name: Name, Rules: Rules,
	Kind: measure.Benchmark, // it creates a DaemonSet (read-only runs leave it out)
	New:  func(o measure.Options) measure.Measurement { return New(RunOptions(o)) },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the real nodes the agent runs on"},
		{Verbs: []string{"create", "delete", "get"}, Group: "apps", Resource: "daemonsets", Reason: "the node agent DaemonSet (host probes on every real node)"},
		{Verbs: []string{"list", "watch"}, Resource: "pods", Reason: "the agent pods' readiness and results; the pods whose DNS queries the agents timed, by IP"},
		{Verbs: []string{"get"}, Resource: "pods/log", Reason: "each agent pod's report"},
	},
}

// RunOptions are the sweep's options in a run: the agents watch the run's observation window (at least the
// default 2 s, at most the agent's 1 minute), so that their DNS tracers see every pod's queries over the run's
// load and a query can be seen to time out (5 s); with the run's NodeAgent, the kept agents of that namespace
// are read instead (KeptSpec).
func RunOptions(o measure.Options) Options {
	opts := DefaultOptions(o.Image)
	opts.Window = min(max(opts.Window, o.Window), MaxWindow)
	opts.Kept = o.NodeAgent
	return opts
}

package nodeagent

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The node agent kept running between runs (`kubeslow watch install --node-agent`): the DaemonSet KeptName in
// the install's namespace, each agent reading its node every KeptEvery (a watch of KeptEvery: its tracers are
// attached all the time but for the moment between two reads) and logging one report line each; nodes.agent
// with Options.Kept reads the newest line of each agent's log and creates nothing.
const (
	KeptName  = "kubeslow-node-agent"
	KeptEvery = time.Minute
	// KeptProbeBytes is each directory's sync-write probe per read: a quarter of a run's, since it repeats.
	KeptProbeBytes = 256 << 10
	// KeptSlack is how much older than two reads a kept agent's newest report may be (its read's own time, the
	// clocks of the node and of kubeslow) before it is stale.
	KeptSlack = 30 * time.Second
)

// keptTail is how many of a kept agent's last log lines are read for its newest report (the agent's warnings
// share the log).
var keptTail int64 = 5

// KeptSpec declares nodes.agent reading a kept node agent: read-only. The reads in the agent's namespace are
// what `kubeslow watch install --node-agent` grants there by a Role: a run's preflight asks cluster-wide and
// would be denied them, so they are Optional and the measurement finds out itself (a forbidden read is a
// skip with why).
var KeptSpec = measure.Spec{
	Name: Name, Rules: Rules, Kind: measure.ReadOnly,
	New: func(o measure.Options) measure.Measurement { return New(RunOptions(o)) },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the real nodes the kept agents run on, and the images they hold"},
		{Verbs: []string{"get"}, Group: "apps", Resource: "daemonsets", Reason: "the kept node agent DaemonSet (" + KeptName + ") and its agents' count", Optional: true},
		{Verbs: []string{"list"}, Resource: "pods", Reason: "the kept agents' pods; the pods whose DNS queries and connects the agents timed, by IP", Optional: true},
		{Verbs: []string{"get"}, Resource: "pods/log", Reason: "each kept agent's newest report", Optional: true},
	},
}

// Spec implements measure.Declared: a measurement reading kept agents is the read-only KeptSpec.
func (m *Measurement) Spec() measure.Spec {
	if m.Opts.Kept != "" {
		return KeptSpec
	}
	return Spec
}

// KeptDaemonSet is the node agent kept running in namespace ns with image, labelled labels (the install's):
// a read of every (KeptEvery by default; at most MaxWindow, the agent's longest watch) every every,
// KeptProbeBytes per sync probe.
func KeptDaemonSet(ns, image string, labels map[string]string, every time.Duration) *appsv1.DaemonSet {
	if every <= 0 || every > MaxWindow {
		every = KeptEvery
	}
	l := map[string]string{"kubeslow.dev/role": "node-agent"}
	for k, v := range labels {
		l[k] = v
	}
	req := agentproto.NodeHost{HostRoot: hostRoot, KubeletDir: probeDir, RuntimeDir: "/", ProbeBytes: KeptProbeBytes, Window: every,
		ReadyFile: readyFile, Every: every}
	ds := daemonSet(ns, l, image, req)
	ds.Name = KeptName
	return ds
}

// keptEvery is the --every of a kept agent DaemonSet's container (0: not one).
func keptEvery(ds *appsv1.DaemonSet) time.Duration {
	for _, c := range ds.Spec.Template.Spec.Containers {
		if i := slices.Index(c.Args, "--"+agentproto.FlagEvery); i >= 0 && i+1 < len(c.Args) {
			d, _ := time.ParseDuration(c.Args[i+1])
			return d
		}
	}
	return 0
}

// keptRead reads the kept agents in namespace ns: the DaemonSet (absent or forbidden: skipped, with how to keep
// one), then each Ready agent's newest report, stale ones (older than two reads and KeptSlack) counted as
// failures with their age.
func (m *Measurement) keptRead(ctx context.Context, env *measure.Env) (result.Result, error) {
	ns := m.Opts.Kept
	res := result.Result{Name: Name, Status: result.StatusPass}
	ds, err := env.Client.AppsV1().DaemonSets(ns).Get(ctx, KeptName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return res, measure.Skipf("no node agent kept in namespace %s (daemonset %s): `kubeslow watch install --node-agent` keeps one", ns, KeptName)
	case apierrors.IsForbidden(err):
		return res, measure.Skipf("no permission to read the kept node agent (daemonset %s/%s): %v", ns, KeptName, err)
	case err != nil:
		return res, fmt.Errorf("reading the kept node agent: %w", err)
	}
	if ds.Status.DesiredNumberScheduled == 0 {
		return res, noRealNode()
	}
	every := keptEvery(ds)
	if every <= 0 {
		return res, fmt.Errorf("daemonset %s/%s runs no kept agent (no --%s in its container's arguments)", ns, KeptName, agentproto.FlagEvery)
	}
	now := env.Clock.Now()
	hosts, failures, err := m.collect(ctx, env, ds, fresh(now, every))
	if apierrors.IsForbidden(err) {
		return res, measure.Skipf("no permission to list the kept node agents in %s: %v", ns, err)
	}
	if err != nil {
		return res, err
	}
	res = analyzeHosts(ctx, env, hosts, failures, ds.Status.DesiredNumberScheduled)
	oldest := now
	for _, h := range hosts {
		if h.At.Before(oldest) {
			oldest = h.At
		}
	}
	note := fmt.Sprintf("read from the node agents kept in %s (each reads its node every %s; the oldest report used ended %s)",
		ns, every, oldest.UTC().Format(time.TimeOnly))
	if res.Reason == "" {
		res.Reason = note
	} else {
		res.Reason = note + "; " + res.Reason
	}
	return res, nil
}

// fresh says whether a kept agent's newest report, read at now, is recent enough for an agent reading every
// every: at most two reads and KeptSlack old (a report without its time is not).
func fresh(now time.Time, every time.Duration) func(*agent.NodeHost) error {
	return func(h *agent.NodeHost) error {
		if h.At.IsZero() {
			return fmt.Errorf("its newest report has no time (an agent older than this kubeslow)")
		}
		if age := now.Sub(h.At); age > 2*every+KeptSlack {
			return fmt.Errorf("its newest report ended %s, %s ago, more than two reads of %s: the agent stopped reading", h.At.UTC().Format(time.RFC3339), age.Round(time.Second), every)
		}
		return nil
	}
}

// kept is a run's read of kept agents: nothing to start; at the window's end, their newest reports.
type kept struct {
	m   *Measurement
	env *measure.Env
}

// Sample implements measure.Observation: the kept agents read their nodes themselves.
func (*kept) Sample(context.Context) {}

// Gather implements measure.Observation.
func (k *kept) Gather(ctx context.Context) (result.Result, error) { return k.m.keptRead(ctx, k.env) }

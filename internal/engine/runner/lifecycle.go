package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Target is the cluster a run measures: a kubeconfig and context (the CLI), or a REST config made by the
// caller (a test's lab), plus what kubeslow knows of it when it is its own lab.
type Target struct {
	// Client selects the kubeconfig and context when Config is nil. Its QPS and Burst are kubeslow's own
	// client-side limit for its reads; the benchmarks' headroom is added to them (see Headroom).
	Client kube.ClientOptions
	// Config, when set, is used instead of loading a kubeconfig; Name then names the cluster.
	Config *rest.Config
	Name   string
	// Lab is true when the target is kubeslow's own lab: it names the context "lab" and marks the report's
	// cluster; no measurement reads it (the lab is measured as any cluster, from its kubeconfig).
	Lab bool
}

// Plan is one run: what to measure where, the rules that turn results into findings, and the run's bounds.
type Plan struct {
	Target       Target
	Measurements []measure.Measurement
	Rules        []rule.Rule
	// Budget bounds the benchmarks' total time (0: no bound): none starts after it and a running one stops
	// waiting on the cluster at it (measure.Env.WaitBound, BoundContext); read-only checks always run.
	Budget time.Duration
	// Progress gets one line per step (nil: none); Log gets debug output (nil: discarded).
	Progress func(format string, args ...any)
	Log      *slog.Logger
	// Clock is the time source (nil: the real clock).
	Clock clock.Clock
	// NoPreflight skips the permission checks (SelfSubjectAccessReviews) before the run.
	NoPreflight bool
	// NodeTier is the run's control-plane node tier (cpnode.NewShared), started by the first measurement that
	// reads it and closed at the end of the run; nil: none, NodeTierOff says why.
	NodeTier    measure.NodeTier
	NodeTierOff string
	// Said are the sources the caller has explained on its progress lines already (Options.Said).
	Said []string
}

// BenchmarkPermissions are what the run itself needs when a benchmark runs: its own namespace, and the
// cleanup of everything carrying its run label (kube.Cleanup's kinds).
var BenchmarkPermissions = []measure.Permission{
	{Verbs: []string{"create", "delete", "list"}, Resource: "namespaces", Reason: "the run's own namespace, deleted at the end"},
	{Verbs: []string{"list", "delete"}, Resource: "pods", Reason: "cleanup of what a run created (by its run label)"},
	{Verbs: []string{"list", "delete"}, Resource: "services", Reason: "cleanup of what a run created (by its run label)"},
	{Verbs: []string{"list", "delete"}, Resource: "configmaps", Reason: "cleanup of what a run created (by its run label)"},
	{Verbs: []string{"list", "delete"}, Group: "apps", Resource: "deployments", Reason: "cleanup of what a run created (by its run label)"},
	{Verbs: []string{"list", "delete"}, Group: "apps", Resource: "daemonsets", Reason: "cleanup of what a run created (by its run label)"},
	{Verbs: []string{"list", "delete"}, Group: "batch", Resource: "jobs", Reason: "cleanup of what a run created (by its run label)"},
}

// DiscoveryPermissions are what the cluster's identification reads; without them those facts are
// "unknown" and nothing is skipped.
var DiscoveryPermissions = []measure.Permission{
	{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "node counts (also nodes.health)"},
	{Verbs: []string{"get"}, Resource: "namespaces", Reason: "kube-system's UID identifies the cluster across runs"},
	{Verbs: []string{"list", "get"}, Resource: "pods", Reason: "facts: the CNI, kube-proxy's mode, the DNS deployment (kube-system)"},
	{Verbs: []string{"list"}, Group: "apps", Resource: "daemonsets", Reason: "facts: the CNI and kube-proxy DaemonSets"},
	{Verbs: []string{"get"}, Resource: "configmaps", Reason: "facts: kube-proxy's configuration"},
	{Verbs: []string{"get"}, Resource: "services", Reason: "facts: the DNS Service"},
}

// Preflight asks, before any work, whether the run may do what each measurement needs (a benchmark also
// needs BenchmarkPermissions) and returns, by measurement name, why one will be skipped; each is said on
// one progress line.
func Preflight(ctx context.Context, rv *measure.Reviewer, ms []measure.Measurement, progress func(string, ...any)) map[string]string {
	skip := map[string]string{}
	for _, m := range ms {
		ps := measure.PermissionsOf(m)
		if measure.KindOf(m) == measure.Benchmark {
			ps = append(ps, BenchmarkPermissions...)
		}
		d, err := rv.Denied(ctx, ps)
		if err != nil || d == nil {
			continue
		}
		skip[m.Name()] = fmt.Sprintf("no permission to %s (%s); `kubeslow rbac` prints the roles kubeslow needs", d, d.Reason)
		progress("%s will be skipped: %s", m.Name(), skip[m.Name()])
	}
	return skip
}

// Default client-side limits for kubeslow's own reads (the --qps and --burst flags' defaults).
const (
	DefaultQPS   = 20
	DefaultBurst = 40
)

// Headroom is the client-side limit a run needs: kubeslow's own (qps, burst) plus the largest rate one
// benchmark sends by itself (benchmarks run one after another, so their rates do not add up).
func Headroom(qps float32, burst int, ms []measure.Measurement) (float32, int) {
	var q float32
	var b int
	for _, m := range ms {
		if l, ok := m.(measure.Loader); ok {
			mq, mb := l.ClientLoad()
			q, b = max(q, mq), max(b, mb)
		}
	}
	return qps + q, burst + b
}

// connect builds the run's client with the given limits.
func (t Target) connect(qps float32, burst int) (*kube.Cluster, error) {
	if t.Config != nil {
		return kube.FromConfig(t.Config, t.Name, qps, burst)
	}
	o := t.Client
	o.QPS, o.Burst = qps, burst
	c, err := kube.Connect(o)
	if err != nil {
		return nil, err
	}
	if t.Lab {
		c.Context = "lab"
	}
	return c, nil
}

// Execute is the one run lifecycle of `kubeslow run`, every `kubeslow bench` against a cluster, and the
// scenario tests: connect (with the client headroom the benchmarks need), discover, a fresh run ID and, when
// a benchmark needs one, the run's namespace; then the measurements (Run), kubeslow's own overhead, and the
// cleanup of everything labelled with the run ID — on every exit path, Ctrl-C included (ctx cancelled: the
// measurements stop, the cleanup runs on a fresh context).
//
// A namespace that cannot be created (no permission, etcd out of space) skips the benchmarks with the
// reason; the read-only checks still run. Execute fails only when the cluster cannot be reached.
func Execute(ctx context.Context, p Plan) (*result.Report, error) {
	start := markNow()
	clk := p.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	progress := p.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base := p.Target.Client
	if base.QPS <= 0 {
		base.QPS = DefaultQPS
	}
	if base.Burst <= 0 {
		base.Burst = DefaultBurst
	}
	qps, burst := Headroom(base.QPS, base.Burst, p.Measurements)
	c, err := p.Target.connect(qps, burst)
	if err != nil {
		return nil, err
	}
	progress("connecting to %s (%s)", c.Config.Host, c.Context)
	cl, err := kube.Discover(ctx, c.Client, c.Context, c.Config.Host)
	if err != nil {
		return nil, err
	}
	cl.Lab = p.Target.Lab
	progress("cluster %s: %d nodes (%d ready, %d simulated)", cl.Version, cl.Nodes.Total, cl.Nodes.Ready, cl.Nodes.Simulated)

	runID := kube.NewRunID(clk.Now())
	ns := "kubeslow-" + runID
	o := Options{Client: c.Client, Config: c.Config, Cluster: cl, Clock: clk, Log: log, RunID: runID, Namespace: ns,
		Budget: p.Budget, Progress: progress, Rules: p.Rules, NodeTier: p.NodeTier, NodeTierOff: p.NodeTierOff, Said: p.Said}
	if !p.NoPreflight {
		o.Skip = Preflight(ctx, &measure.Reviewer{Client: c.Client}, p.Measurements, progress)
	}
	// The node tier's agents need the run's namespace, where a node may run them (a managed control plane has
	// none: the tier then says so without creating anything).
	nodeTier := o.NodeTier != nil && measure.UsesNodeTier(p.Measurements) && controlPlaneNodes(ctx, c.Client)
	if needsNamespace(p.Measurements, o.Skip) || nodeTier {
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: kube.ObjectMeta(ns, "", runID)}, metav1.CreateOptions{}); err != nil {
			// A cluster that refuses writes (etcd out of space, no permission) still gets its read-only
			// checks; the benchmarks are skipped with the reason.
			o.SkipBenchmarks = fmt.Sprintf("could not create the run's namespace %s: %v", ns, err)
			progress("%s: benchmarks skipped", o.SkipBenchmarks)
			o.NodeTier, o.NodeTierOff = nil, o.SkipBenchmarks+": no node agent can be deployed"
		} else {
			progress("run %s: objects in namespace %s (deleted at the end; `kubeslow cleanup --run %s` if interrupted)", runID, ns, runID)
			defer cleanup(c.Config, runID, log, progress)
			if why := waitDefaultServiceAccount(ctx, c.Client, ns, serviceAccountWait, serviceAccountPoll); why != "" {
				progress("%s", why)
			}
		}
	}
	rep := Run(ctx, o, p.Measurements)
	if o.NodeTier != nil {
		o.NodeTier.Close(ctx)
	}
	// kubeslow's own cost up to the end of the measurements (the cleanup that follows is not counted).
	rep.Results = append(rep.Results, overhead(start, c.Requests, c.Backoff))
	rep.End = clk.Now().UTC()
	return rep, nil
}

// controlPlaneNodes reports whether a node carries a control-plane role label (true when the nodes cannot be
// listed: the node tier then says why).
func controlPlaneNodes(ctx context.Context, c kubernetes.Interface) bool {
	for _, l := range []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"} {
		nl, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: l, Limit: 1})
		if err != nil || len(nl.Items) > 0 {
			return true
		}
	}
	return false
}

func needsNamespace(ms []measure.Measurement, skip map[string]string) bool {
	for _, m := range ms {
		if _, skipped := skip[m.Name()]; !skipped && measure.KindOf(m) == measure.Benchmark {
			return true
		}
	}
	return false
}

// cleanup deletes what the run created, on a fresh context: it must run after Ctrl-C too.
func cleanup(cfg *rest.Config, runID string, log *slog.Logger, progress func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(cfg)
	if err == nil {
		// An apiserver restarting or an etcd stalled at the end of the run refuses the cleanup for a while:
		// it is tried again every 2 s within its 2 minutes, so a fault does not leave the run's objects behind.
		_ = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
			if _, err = kube.Cleanup(ctx, dyn, runID, log); err != nil {
				progress("cleanup of run %s: %v (trying again)", runID, err)
				return false, nil
			}
			return true, nil
		})
	}
	if err != nil {
		progress("cleanup of run %s failed: %v (run `kubeslow cleanup --run %s`)", runID, err, runID)
	}
}

// Exit codes of every command that produces a report.
const (
	ExitOK = 0
	// ExitFindings: a finding at or above the --fail-on severity.
	ExitFindings = 1
	// ExitCouldNotRun: the command could not run, or nothing was measured (every measurement skipped or
	// errored) — which must not read as a healthy cluster.
	ExitCouldNotRun = 2
)

// Outcome is the exit code of a report and, when nothing was measured, why: the reason of each skipped or
// errored measurement.
func Outcome(r *result.Report, failOn result.Severity) (int, string) {
	if t := r.Tally(); t.Ran == 0 {
		var why []string
		for _, res := range r.Results {
			if !strings.HasPrefix(res.Name, result.SelfPrefix) {
				why = append(why, fmt.Sprintf("%s %s: %s", res.Name, strings.ToLower(string(res.Status)), res.Reason))
			}
		}
		if len(why) == 0 {
			return ExitCouldNotRun, "nothing was measured: no measurement selected"
		}
		return ExitCouldNotRun, "nothing was measured (" + t.String() + "): " + strings.Join(why, "; ")
	}
	return ExitCode(r, failOn), ""
}

// How long a run waits for its namespace's default ServiceAccount, polling at serviceAccountPoll.
const (
	serviceAccountWait = 30 * time.Second
	serviceAccountPoll = 100 * time.Millisecond
)

// waitDefaultServiceAccount waits, up to limit, until namespace ns has its "default" ServiceAccount. The
// controller-manager's ServiceAccount controller makes it moments after the namespace; until then the
// ServiceAccount admission plugin refuses every pod of the namespace ("serviceaccount default not found", a
// Forbidden that a measurement would take for missing RBAC and skip on: seen on the lab 1.3 s after a namespace
// was made, while a restarted controller-manager caught up). It returns "" once the ServiceAccount is there, else
// why the run goes on without it: kubeslow may not read ServiceAccounts (its role needs not), or the wait ran out
// (a cluster without that controller, or one too slow: the pods' creation then says what the apiserver says).
func waitDefaultServiceAccount(ctx context.Context, c kubernetes.Interface, ns string, limit, poll time.Duration) string {
	var last error
	err := wait.PollUntilContextTimeout(ctx, poll, limit, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			last = err
			return false, nil
		default:
			return false, err
		}
	})
	switch {
	case err == nil:
		return ""
	case last != nil && (errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err)):
		return fmt.Sprintf("namespace %s has no default ServiceAccount after %s: its pods may be refused until the controller-manager makes it", ns, limit)
	default:
		return fmt.Sprintf("not waiting for namespace %s's default ServiceAccount: %v", ns, err)
	}
}

package measure

import (
	"time"

	"github.com/kubeslow/kubeslow/internal/rule"
)

// Spec declares one measurement: everything the rest of kubeslow reads of it. Each measurement package
// declares its own (spec.go: `var Spec = measure.Spec{...}`) and internal/engine/catalogue lists them; from that
// list the registry of `kubeslow run`, the rule set of the findings engine (internal/engine/check) and its reference
// (docs/rules.md), the ClusterRoles of `kubeslow rbac` and the past-window path (internal/measure/promwindow)
// are derived, so adding a measurement is its package plus one line in catalogue.Specs.
//
// A rule's firing and clear fixtures live in the measurement's fixture package (<name>test.RuleFixtures),
// which imports the measurement and so cannot be named here; internal/engine/check finds those packages itself
// (fixtures_gen_test.go) and fails a rule of a Spec that has none.
type Spec struct {
	// Name is the measurement's (and its result's) name.
	Name string
	// Bench says only `kubeslow bench` runs it: its command builds it from its own flags. Otherwise `kubeslow
	// run` does, with the run's Options.
	Bench bool
	// Kind is ReadOnly or Benchmark (it creates objects or load): KindOf reads it here, through the instance's
	// Spec method (Declared).
	Kind Kind
	// New builds the measurement from the run's options (for a bench: from its defaults).
	New func(o Options) Measurement
	// Rules are the rules over its result (nil: none).
	Rules func() []rule.Rule
	// Permissions are everything it may ask of the API server, each with its reason: `kubeslow rbac` grants
	// them and a run checks them first (PermissionsOf reads them here, through the instance's Spec method).
	Permissions []Permission
	// Prometheus are the signals its rules read as a Prometheus server holds them: the past-window path
	// (`kubeslow run --prometheus`) builds its result from them when it has no hand-written twin of the
	// measurement.
	Prometheus []PromFamily
}

// Declared is implemented by every measurement a Spec declares: Spec returns that Spec, so what it states of
// the measurement (its Kind, its Permissions) is read there and declared nowhere else. A run works on
// instances, built by Spec.New from the run's options or by a `kubeslow bench` subcommand from its flags, and
// this is how one finds its Spec; a name would not do, since two Specs may share one (dns.readiness and its Job
// bench) and the past-window twins (internal/measure/promwindow) carry their measurement's name with no Spec.
// An instance whose options make it another measurement (pods.startup's passive mode) returns the Spec that
// declares that one.
type Declared interface {
	Spec() Spec
}

// SpecOf returns the Spec that declares m (false: none does, e.g. a past-window twin or a test's fake).
func SpecOf(m Measurement) (Spec, bool) {
	if d, ok := m.(Declared); ok {
		return d.Spec(), true
	}
	return Spec{}, false
}

// PromFamily is one metric of a measurement's result read from Prometheus over a past window: a range query
// whose worst step is the metric's value (what the rule compares with its threshold) and whose series become
// the result's profile, marked where they crossed.
type PromFamily struct {
	// Role is the scrape target that exposes it (promwindow.Roles: "apiserver", "kubelet", "cadvisor",
	// "node-exporter", ...): its job is found by discovery, and without it the measurement is skipped.
	Role string
	// Metric is the name of the result's metric the rules read, Unit its unit, What names the signal.
	Metric, Unit, What string
	// Rule is the ID of the rule whose threshold marks the signal's onset ("": no onset mark).
	Rule string
	// Query is the PromQL range query; $job stands for the role's job matcher (job="..."), $rate for the rate
	// window of a profile step, e.g. `max by (instance) (rate(node_x_total{$job}[$rate]))`. Each series is one
	// sample of Metric, its labels the sample's.
	Query string
}

// Options are the settings measurements take from `kubeslow run`'s command line (each Spec's New reads the
// ones it needs).
type Options struct {
	// Window is how long window-based measurements observe (two metric scrapes this far apart).
	Window time.Duration
	// EtcdEndpoint is etcd's metrics endpoint when the user can reach it (--etcd-endpoint).
	EtcdEndpoint string
	// AuditLogs are apiserver audit log files or directories (--audit-log).
	AuditLogs []string
	// Pods is the most pods the pod start-up benchmark creates (0: 50): it lowers the count to the free pod
	// slots of the nodes its pods may use, read from the cluster, and says so.
	Pods int
	// PodsWatch, when set, makes pods.startup passive: it creates nothing and measures the pods others create.
	PodsWatch *PodsWatch
	// Image holds the kubeslow binary at /kubeslow, for benchmarks that run kubeslow in pods (DNS
	// readiness); empty skips them.
	Image string
	// NodeAgent is the namespace of a node agent kept running (`kubeslow watch install --node-agent`): nodes.agent
	// reads its newest reports, read-only, instead of deploying agents of its own ("": it deploys them).
	NodeAgent string
}

// Defaults fills in the zero settings: a 20 s window, 50 pods.
func (o Options) Defaults() Options {
	if o.Window <= 0 {
		o.Window = 20 * time.Second
	}
	if o.Pods <= 0 {
		o.Pods = 50
	}
	return o
}

// PodsWatch selects the pods a passive pods.startup observes (podstartup.PassiveOptions is this type, with
// its defaults and validation): pods that others create, measured by the same method and analysis as the
// benchmark's own, with nothing created.
type PodsWatch struct {
	// Namespace of the pods ("": every namespace).
	Namespace string
	// Selector is a label selector ("": every pod of Namespace).
	Selector string
	// Count: stop once this many pods created after the watch started are Running (0: watch for Timeout).
	Count int
	// SLO is the p99 threshold; Timeout how long to watch at most.
	SLO, Timeout time.Duration
}

// NewRegistryOf builds the registry of `kubeslow run` from specs: every Spec that is not a bench, built with
// o's settings (Defaults), in the specs' order.
func NewRegistryOf(o Options, specs []Spec) *Registry {
	o = o.Defaults()
	var ms []Measurement
	for _, s := range specs {
		if !s.Bench {
			ms = append(ms, s.New(o))
		}
	}
	return NewRegistry(ms...)
}

// RulesOf are the rules every spec declares, in the specs' order.
func RulesOf(specs []Spec) []rule.Rule {
	var out []rule.Rule
	at := map[string]int{}
	for _, s := range specs {
		if s.Rules == nil {
			continue
		}
		for _, r := range s.Rules() {
			// A rule ID several measurements declare (one cause read from several sources) is one rule: the
			// first declaration, with the others as its Alternatives.
			if i, ok := at[r.ID]; ok {
				out[i].Alternatives = append(out[i].Alternatives, r)
				continue
			}
			at[r.ID] = len(out)
			out = append(out, r)
		}
	}
	return out
}

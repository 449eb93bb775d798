// Package catalogue is the explicit list of kubeslow's measurements: adding one is one package (declaring its
// measure.Spec) plus one line in Specs. The registry of `kubeslow run`, the findings engine's rules
// (internal/engine/check) and their reference (docs/rules.md), `kubeslow rbac` and the past-window path
// (internal/measure/promwindow) are all derived from that list.
package catalogue

import (
	"github.com/kubeslow/kubeslow/internal/bench/churn"
	"github.com/kubeslow/kubeslow/internal/bench/diskagent"
	"github.com/kubeslow/kubeslow/internal/bench/dnsbench"
	"github.com/kubeslow/kubeslow/internal/bench/netpath"
	"github.com/kubeslow/kubeslow/internal/explain/passive"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/apiaudit"
	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/availability"
	"github.com/kubeslow/kubeslow/internal/measure/cpapi"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/internal/measure/dnsfacts"
	"github.com/kubeslow/kubeslow/internal/measure/dnslookup"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/internal/measure/podres"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/rule"
)

// Options are the settings measurements take from the command line (measure.Options).
type Options = measure.Options

// Specs are every measurement: those `kubeslow run` runs, in the order reports list them, then the benches
// only `kubeslow bench` runs.
func Specs() []measure.Spec {
	return []measure.Spec{
		availability.Spec, // first: its probe watches the whole run
		nodes.Spec,
		apislo.Spec,
		etcdhealth.Spec,
		cpusage.Spec,
		cpapi.Spec,
		apiaudit.Spec,
		podstartup.Spec,
		passive.Spec,
		dnsfacts.Spec,
		dnsready.Spec,
		dnslookup.Spec,
		kubelet.Spec,
		throttle.Spec,
		podres.Spec,
		nodeagent.Spec,

		netpath.Spec,
		netpath.MTUSpec,
		diskagent.Spec,
		churn.Spec,
		dnsready.JobSpec,
		dnsbench.Spec,
	}
}

// Registry returns every measurement `kubeslow run` runs, in the order reports list them, built with o.
func Registry(o Options) *measure.Registry { return measure.NewRegistryOf(o, Specs()) }

// Rules are the rules every measurement declares, those of the benches included (each bench command evaluates
// its own measurement's).
func Rules() []rule.Rule { return measure.RulesOf(Specs()) }

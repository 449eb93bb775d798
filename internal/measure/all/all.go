// Package all is the explicit list of kubeslow's measurements: adding one is one package plus one line here
// (in Registry for a measurement `run` runs, in BenchRules for one only `kubeslow bench` runs); the findings
// engine (internal/check) collects the measurements' rules from these lists.
package all

import (
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/apiaudit"
	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/churn"
	"github.com/kubeslow/kubeslow/internal/measure/cpapi"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/measure/dnsfacts"
	"github.com/kubeslow/kubeslow/internal/measure/dnslookup"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/netpath"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/internal/measure/podres"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/rule"
)

// Options are the settings measurements take from the command line.
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
	PodsWatch *podstartup.PassiveOptions
	// Image holds the kubeslow binary at /kubeslow, for benchmarks that run kubeslow in pods (DNS
	// readiness); empty skips them.
	Image string
}

// Registry returns every measurement, in the order reports list them.
func Registry(o Options) *measure.Registry {
	if o.Window <= 0 {
		o.Window = 20 * time.Second
	}
	if o.Pods <= 0 {
		o.Pods = 50
	}
	// The benchmarks' own defaults (their packages own them), with what the run's profile sets.
	pods := podstartup.DefaultOptions()
	pods.Count = o.Pods
	var podsM measure.Measurement = podstartup.New(pods)
	if o.PodsWatch != nil {
		podsM = podstartup.NewPassive(*o.PodsWatch)
	}
	dns := dnsready.DefaultOptions()
	dns.Image = o.Image
	lookups := dnslookup.DefaultOptions()
	lookups.Image = o.Image
	return measure.NewRegistry(
		nodes.New(),
		apislo.New(o.Window),
		etcdhealth.New(o.Window, o.EtcdEndpoint),
		cpusage.New(o.Window, o.EtcdEndpoint),
		cpapi.New(),
		apiaudit.New(o.Window, o.AuditLogs),
		podsM,
		dnsfacts.New(o.Window),
		dnsready.New(dns),
		dnslookup.New(lookups),
		kubelet.New(),
		throttle.New(o.Window),
		podres.New(o.Window),
		nodeagent.New(nodeagent.DefaultOptions(o.Image)),
	)
}

// BenchRules are the rules of the measurements only `kubeslow bench` runs (each bench command evaluates its
// own measurement's).
func BenchRules() []func() []rule.Rule {
	return []func() []rule.Rule{netpath.Rules, disk.Rules, churn.Rules}
}

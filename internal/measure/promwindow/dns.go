package promwindow

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/dnsfacts"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// DNS is dns.facts from Prometheus: CoreDNS's own metrics per replica (instance) over the window — requests,
// answers by rcode, cache, forward errors, request and forward latency — analysed by dnsfacts.Analyze as the
// live measurement analyses each replica's two scrapes, so the replica rules (KS-DNS-REPLICA-ERRORS,
// KS-DNS-REPLICA-SLOW) read it on their thresholds. Where the replicas run and what protects their placement
// come from the API, not from metrics: those are listed as absent, so KS-DNS-HOTSPOT is not evaluated.
type DNS struct{ src *Source }

// NewDNS returns the measurement.
func NewDNS(s *Source) *DNS { return &DNS{src: s} }

// Name implements measure.Measurement: the live measurement's name, so the same rules read it.
func (*DNS) Name() string { return dnsfacts.Name }

// Description implements measure.Measurement.
func (d *DNS) Description() string {
	return fmt.Sprintf("CoreDNS requests, errors, cache and latency per replica, from Prometheus over %s", d.src.Window)
}

// dnsCounters are CoreDNS's counters dnsfacts reads, with the labels it groups by besides the instance.
var dnsCounters = []struct {
	family string
	labels []string
}{
	{"coredns_dns_requests_total", nil}, {"coredns_dns_responses_total", []string{"rcode"}},
	{"coredns_cache_hits_total", nil}, {"coredns_cache_misses_total", nil}, {"coredns_cache_requests_total", nil},
	{"coredns_proxy_healthcheck_failures_total", nil}, {"coredns_forward_healthcheck_failures_total", nil},
	{"coredns_forward_healthcheck_broken_total", nil}, {"coredns_forward_max_concurrent_rejects_total", nil},
	{"coredns_panics_total", nil},
}

// dnsUnknownNode is the node of a replica: CoreDNS's series do not say where it runs.
const dnsUnknownNode = "a node the series do not name"

// dnsPlacement are dns.facts' metrics that come from the API (pods, nodes, Deployments), not from metrics.
var dnsPlacement = map[string]bool{dnsfacts.MetricReplicasOnNode: true, dnsfacts.MetricRealNodes: true, dnsfacts.MetricNodesWithReplicas: true,
	dnsfacts.MetricReplicasInZone: true, dnsfacts.MetricSpreadProtected: true, dnsfacts.MetricNodeLocalCache: true, dnsfacts.MetricAutoscaler: true,
	dnsfacts.MetricNodeQueryShare: true, dnsfacts.MetricNodeQueriesPerSecond: true}

// Run implements measure.Measurement.
func (d *DNS) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	s := d.src
	if err := s.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	job, ok := s.Selector("coredns")
	if !ok {
		return result.Result{}, measure.Skipf("%s", s.absentReason("coredns"))
	}
	fams := map[string]*dto.MetricFamily{}
	// Every counter in one query: each family's increase, marked with its name (increase() drops it).
	var parts []string
	for _, c := range dnsCounters {
		parts = append(parts, fmt.Sprintf(`label_replace(sum %s (%s), "family__", %q, "", "")`,
			by(append([]string{"instance"}, c.labels...)), s.increase(selector(c.family, job), job), c.family))
	}
	v, err := s.Client.Instant(ctx, strings.Join(parts, " or "), s.Window.To)
	if err != nil {
		return result.Result{}, err
	}
	for _, smp := range v {
		name := string(smp.Metric["family__"])
		f := fams[name]
		if f == nil {
			f = &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_COUNTER.Enum()}
			fams[name] = f
		}
		m := smp.Metric.Clone()
		delete(m, "family__")
		if val := float64(smp.Value); !math.IsNaN(val) {
			f.Metric = append(f.Metric, &dto.Metric{Label: pairs(m), Counter: &dto.Counter{Value: proto.Float64(val)}})
		}
	}
	for _, h := range []struct {
		family string
		labels []string
	}{
		{"coredns_dns_request_duration_seconds", []string{"instance"}},
		{"coredns_proxy_request_duration_seconds", []string{"instance", "proxy_name", "rcode"}},
		{"coredns_forward_request_duration_seconds", []string{"instance", "rcode"}},
	} {
		if err := s.histogram(ctx, fams, h.family, job, h.labels, false); err != nil {
			return result.Result{}, err
		}
	}
	perInst := splitBy(fams, "instance")
	insts := make([]string, 0, len(perInst))
	for i := range perInst {
		insts = append(insts, i)
	}
	sort.Strings(insts)
	f := dnsfacts.Facts{Server: "CoreDNS", Workload: "job " + jobValue(job), Window: s.Window.Duration()}
	for _, inst := range insts {
		f.Replicas = append(f.Replicas, dnsfacts.Replica{Pod: inst, Node: dnsUnknownNode, Ready: true,
			Before: &prom.Snapshot{At: s.Window.From, Families: map[string]*dto.MetricFamily{}}, After: &prom.Snapshot{At: s.Window.To, Families: perInst[inst]}})
	}
	if len(f.Replicas) == 0 {
		return result.Result{}, measure.Skipf("job %s exposed no CoreDNS request metrics in %s", jobValue(job), s.Window)
	}
	res := dnsfacts.Analyze(f)
	kept := res.Metrics[:0]
	for _, m := range res.Metrics {
		if !dnsPlacement[m.Name] {
			kept = append(kept, m)
		}
	}
	res.Metrics = kept
	recs := res.Records[:0]
	for _, r := range res.Records {
		if r.ID != "cluster-dns" {
			recs = append(recs, r)
		}
	}
	res.Records = recs
	res.Start, res.End = s.Window.From, s.Window.To
	for _, m := range []string{dnsfacts.MetricReplicasOnNode, dnsfacts.MetricRealNodes, dnsfacts.MetricSpreadProtected, dnsfacts.MetricNodeQueryShare} {
		res.Absent = append(res.Absent, result.Absence{Metric: m, Series: "(pods, nodes and the DNS Deployment from the API)",
			Reason: "where the DNS replicas run and what spreads them are API objects, not metrics: read them live (dns.facts)"})
	}
	s.label(&res, "job "+jobValue(job), map[string]string{
		dnsfacts.MetricErrorShare: "coredns_dns_responses_total", dnsfacts.MetricErrorShareExcess: "coredns_dns_responses_total",
		dnsfacts.MetricRequestP99: "coredns_dns_request_duration_seconds", dnsfacts.MetricRequestP99VsMedian: "coredns_dns_request_duration_seconds",
		dnsfacts.MetricRequestsPerSecond: "coredns_dns_requests_total"})
	return res, nil
}

// splitBy splits families into one set per value of label (each kubelet's or replica's own /metrics).
func splitBy(fams map[string]*dto.MetricFamily, label string) map[string]map[string]*dto.MetricFamily {
	out := map[string]map[string]*dto.MetricFamily{}
	for name, f := range fams {
		for _, m := range f.Metric {
			v := ""
			for _, l := range m.Label {
				if l.GetName() == label {
					v = l.GetValue()
				}
			}
			if out[v] == nil {
				out[v] = map[string]*dto.MetricFamily{}
			}
			nf := out[v][name]
			if nf == nil {
				nf = &dto.MetricFamily{Name: f.Name, Type: f.Type}
				out[v][name] = nf
			}
			nf.Metric = append(nf.Metric, m)
		}
	}
	return out
}

package scenario_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationDNSJob runs `bench job`'s measurement (an Indexed Job of 4 members on two real nodes, each
// connecting to every peer with a 1 s x2 back-off; cold and with a warm-up Service) on a healthy lab, where
// the job starts with no finding, on dns-denial-cache, where the lag and back-off findings carry the
// job-level numbers, and on dns-endpoint-delay, where the lag is the endpoint controller's (a second
// mechanism: no negative cache beyond the default). With KUBESLOW_RECORD_DIR set, each lab's runs are written there as JSON (the rules'
// fixtures are such recordings).
func TestIntegrationDNSJob(t *testing.T) {
	// dns-denial-cache last: TestIntegrationDNSScenario, next, runs on its lab (labtest.Shared).
	for _, name := range []string{"healthy", "dns-endpoint-delay", "dns-denial-cache"} {
		t.Run(name, func(t *testing.T) {
			sc, err := scenario.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			sc.Configure = withRealNodes(sc.Configure, 2)
			o := dnsready.DefaultJobOptions()
			o.Image, o.Connect, o.Wait = lab.AgentImage, true, 2*time.Minute
			m := dnsready.NewJob(o)
			rep := runScenarioWith(t, sc, []measure.Measurement{m})
			if dir := os.Getenv("KUBESLOW_RECORD_DIR"); dir != "" {
				b, _ := json.MarshalIndent(m.Runs, "", "  ")
				if err := os.WriteFile(filepath.Join(dir, "job-"+name+".json"), b, 0o644); err != nil {
					t.Error(err)
				}
			}
			r := rep.Result(dnsready.Name)
			if r == nil || r.Status != result.StatusPass {
				t.Fatalf("dns.readiness (job): %+v", r)
			}
			val := func(n, variant string) float64 {
				if mm := r.Metric(n, map[string]string{"variant": variant}); mm != nil {
					return mm.Value
				}
				return -1
			}
			for _, v := range []string{dnsready.VariantCold, dnsready.VariantWarmUp} {
				run, ready, res, conn := val(dnsready.MetricJobRunning, v), val(dnsready.MetricJobReady, v), val(dnsready.MetricJobResolvable, v), val(dnsready.MetricJobConnected, v)
				t.Logf("%s %s: all Running %.1f s, Ready %.1f s, resolvable %.1f s, connected %.1f s (DNS wait %.1f s, back-off %.1f s); name lag p99 %.1f s (endpoint %.2f s), back-off extra p99 %.1f s",
					name, v, run, ready, res, conn, val(dnsready.MetricJobDNSWait, v), val(dnsready.MetricJobBackoffWait, v),
					val("dns_lag_p99", v), val("endpoint_lag_p99", v), val("client_backoff_extra_p99", v))
				if run <= 0 || ready < run || res <= 0 || conn < res || val("unresolved", v) != 0 || val("unreported", v) != 0 {
					t.Errorf("%s: phases out of order or members missing", v)
				}
				// The lead starts alone and asks for its peers before they exist (LeadFirst): every variant
				// shows the negative cache's hold.
				if name == "dns-denial-cache" && val(dnsready.MetricJobDNSWait, v) < 10 {
					t.Errorf("%s: the job waited %.1f s for DNS after every member was Ready; the 20 s negative cache should hold it > 10 s", v, val(dnsready.MetricJobDNSWait, v))
				}
				if name == "dns-endpoint-delay" && (val(dnsready.MetricJobDNSWait, v) < 8 || val("endpoint_lag_p99", v) < 8) {
					t.Errorf("%s: DNS wait %.1f s, Ready -> EndpointSlice p99 %.1f s; the 15 s batch should hold both > 8 s", v, val(dnsready.MetricJobDNSWait, v), val("endpoint_lag_p99", v))
				}
			}
			if d := r.Metric(dnsready.MetricWarmUpDelta, nil); d != nil {
				t.Logf("%s: warm-up Service changed the start-up by %+.1f s", name, d.Value)
			}
			got := map[string]bool{}
			for _, f := range rep.Findings {
				got[f.ID] = true
				t.Logf("finding %s: %s", f.ID, f.Summary)
			}
			if len(sc.Expect) == 0 && len(rep.Findings) > 0 {
				t.Fatalf("healthy lab: unexpected findings %v", keys(got))
			}
			for _, id := range sc.Expect {
				if !got[id] {
					t.Errorf("finding %s not reported (got %v)", id, keys(got))
				}
			}
			for _, f := range rep.Findings {
				if strings.HasPrefix(f.ID, "KS-DNS-") && !strings.Contains(f.Summary, "whole job (4 pods, ") {
					t.Errorf("%s does not carry the job-level numbers: %s", f.ID, f.Summary)
				}
			}
		})
	}
}

// TestIntegrationDNSScenario reproduces case A: CoreDNS keeps an early NXDOMAIN for 20 s, so a client that asked
// for its peers before they existed resolves them ~20 s after it first asked; the DNS readiness benchmark must
// measure that lag on the DNS side (not the EndpointSlice's) and name the back-off's amplification. It runs on
// the lab of TestIntegrationDNSJob's last case (the same scenario and nodes; its names are in a namespace of
// its own run, so that run's negative answers do not reach it).
func TestIntegrationDNSScenario(t *testing.T) {
	sc, err := scenario.Get("dns-denial-cache")
	if err != nil {
		t.Fatal(err)
	}
	// Two real nodes, as TestIntegrationDNSJob's dns-denial-cache case just before it: the two share its lab.
	sc.Configure = withRealNodes(sc.Configure, 2)
	rep := runScenarioWith(t, sc, []measure.Measurement{dnsready.New(dnsready.Options{Image: lab.AgentImage, Count: 3,
		Interval: 100 * time.Millisecond, Wait: 2 * time.Minute, Backoff: dnsready.DefaultBackoff})})
	r := rep.Result(dnsready.Name)
	if r == nil || r.Status != result.StatusPass {
		t.Fatalf("dns.readiness: %+v", r)
	}
	val := func(n string) float64 {
		if m := r.Metric(n, nil); m != nil {
			return m.Value
		}
		return -1
	}
	t.Logf("dns lag p99 %.1f s (endpoint %.2f s, serving %.1f s), client delay p99 %.1f s, extra %.1f s",
		val("dns_lag_p99"), val("endpoint_lag_p99"), val("serving_lag_p99"), val("client_backoff_delay_p99"), val("client_backoff_extra_p99"))
	// The negative cache holds ~20 s from the first question; the peers were Ready a few seconds after it.
	if lag := val("dns_lag_p99"); lag < 10 || lag > 21 {
		t.Errorf("dns lag p99 %.1f s, want between 10 and 21", lag)
	}
	if ep, sv := val("endpoint_lag_p99"), val("serving_lag_p99"); ep < 0 || ep > 3 || sv < 10 {
		t.Errorf("split: endpoint %.2f s, serving %.1f s: the DNS side should hold the lag", ep, sv)
	}
	got := map[string]bool{}
	for _, f := range rep.Findings {
		got[f.ID] = true
		t.Logf("finding %s: %s", f.ID, f.Summary)
	}
	for _, id := range sc.Expect {
		if !got[id] {
			t.Errorf("finding %s not reported (got %v)", id, keys(got))
		}
	}
}

// withRealNodes is configure, then at least n real nodes.
func withRealNodes(configure func(*lab.Config), n int) func(*lab.Config) {
	return func(c *lab.Config) {
		configure(c)
		c.RealNodes = max(c.RealNodes, n)
	}
}

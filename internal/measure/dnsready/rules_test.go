package dnsready_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready/dnsreadytest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestDNSRules: the lag is a finding past two default negative-cache periods; the back-off is one only on top
// of such a lag, when it adds more than 5 s.
func TestDNSRules(t *testing.T) {
	rep := func(lag, extra, delay float64) *result.Report {
		m := func(n string, v float64) result.Metric { return result.Metric{Name: n, Unit: "seconds", Value: v} }
		return &result.Report{Results: []result.Result{{Name: dnsready.Name, Status: result.StatusPass,
			Metrics: []result.Metric{m("dns_lag_p99", lag), m("endpoint_lag_p99", 0.2), m("serving_lag_p99", lag-0.2),
				m("client_backoff_extra_p99", extra), m("client_backoff_delay_p99", delay)},
			Records: []result.Record{{ID: "client", Labels: map[string]string{"backoff": "1s x2, cap 5m0s"}}}}}}
	}
	for _, c := range []struct {
		name              string
		lag, extra, delay float64
		want              string
	}{
		{"case A", 17.1, 10.9, 28, "KS-DNS-BACKOFF,KS-DNS-LAG"},
		{"lag, back-off lucky", 17.1, 0.9, 18, "KS-DNS-LAG"},
		{"default negative cache", 5.1, 9.9, 15, ""},
	} {
		fs, _ := rule.Evaluate(rep(c.lag, c.extra, c.delay), dnsready.Rules())
		var ids []string
		for _, f := range fs {
			ids = append(ids, f.ID)
		}
		sort.Strings(ids)
		if got := strings.Join(ids, ","); got != c.want {
			t.Errorf("%s: findings %q, want %q", c.name, got, c.want)
		}
		for _, f := range fs {
			if f.ID == "KS-DNS-BACKOFF" && (!strings.Contains(f.Summary, "lag pod readiness by p99 17.1 s") || !strings.Contains(f.Summary, "1s x2") ||
				len(f.Evidence) != 3) {
				t.Errorf("back-off finding %+v", f)
			}
			if f.ID == "KS-DNS-LAG" && !strings.Contains(f.Summary, "EndpointSlice -> resolvable p99 16.9 s") {
				t.Errorf("lag finding %q does not split the lag", f.Summary)
			}
		}
	}
}

// TestDNSRulesOnRecordedJobs: the job benchmark's runs recorded on the lab (4 members on two real nodes,
// connecting with a 1 s x2 back-off; cold and with a warm-up Service). The healthy lab raises nothing; the
// 20 s negative cache raises both rules with the whole job's phases; the 15 s EndpointSlice batch raises the
// lag, split on the endpoint side.
func TestDNSRulesOnRecordedJobs(t *testing.T) {
	for _, c := range []struct {
		lab, want string
		in        []string
	}{
		{"healthy", "", nil},
		{"dns-denial-cache", "KS-DNS-BACKOFF,KS-DNS-LAG", []string{"whole job (4 pods, cold) started 32.1 s after creation", "the back-off 11 s (34%)",
			"EndpointSlice -> resolvable p99 20.2 s"}},
		// The back-off's try at 15 s after the first ask fell just before the names resolved (16 s): its next, at 31 s, makes the second finding.
		{"dns-endpoint-delay", "KS-DNS-BACKOFF,KS-DNS-LAG", []string{"Ready -> EndpointSlice p99 14.2 s, EndpointSlice -> resolvable p99 1.14 s",
			"whole job (4 pods, warm-up) started 31.9 s after creation"}},
	} {
		fs, _ := rule.Evaluate(dnsreadytest.RecordedJob(c.lab)(t), dnsready.Rules())
		var ids []string
		var text strings.Builder
		for _, f := range fs {
			ids = append(ids, f.ID)
			text.WriteString(f.Summary + "\n")
			t.Logf("%s: %s %s", c.lab, f.ID, f.Summary)
			if len(f.Items) > 0 {
				t.Logf("%s: %s items %+v", c.lab, f.ID, f.Items)
			}
		}
		sort.Strings(ids)
		if got := strings.Join(ids, ","); got != c.want {
			t.Errorf("%s: findings %q, want %q", c.lab, got, c.want)
		}
		for _, s := range c.in {
			if !strings.Contains(text.String(), s) {
				t.Errorf("%s: no %q in the findings:\n%s", c.lab, s, text.String())
			}
		}
	}
}

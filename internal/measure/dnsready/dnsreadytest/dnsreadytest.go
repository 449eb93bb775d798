// Package dnsreadytest is dns.readiness's report of scripted lookups: the fixtures of its rules.
package dnsreadytest

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// RuleFixtures are dnsready.Rules' firing and clear fixtures: the job benchmark's runs recorded on the lab
// (the healthy lab: its 5 s negative cache and a 1 s x2 back-off, 8.3 s start-up and no finding;
// dns-denial-cache: 20 s of DNS lag and 11 s of back-off in a 32 s start-up; dns-endpoint-delay: names
// published ~14 s after Ready by the endpoint controller, a second mechanism for the lag).
func RuleFixtures() map[string]ruletest.Fixture {
	return map[string]ruletest.Fixture{
		"KS-DNS-LAG":     {Fire: RecordedJob("dns-endpoint-delay"), Clear: RecordedJob("healthy")},
		"KS-DNS-BACKOFF": {Fire: RecordedJob("dns-denial-cache"), Clear: RecordedJob("healthy")},
	}
}

// RecordedJob is the job benchmark's report of the runs recorded on a lab (dnsready/testdata/job-LAB.json,
// written by TestIntegrationDNSJob with KUBESLOW_RECORD_DIR: 4 members connecting with a 1 s x2 back-off,
// cold and with a warm-up Service).
func RecordedJob(lab string) func(t *testing.T) *result.Report {
	return func(t *testing.T) *result.Report {
		t.Helper()
		runs, err := dnsready.ReadJobRuns(ruletest.Path("internal/measure/dnsready/testdata/job-" + lab + ".json"))
		if err != nil {
			t.Fatal(err)
		}
		o := dnsready.DefaultJobOptions()
		o.Connect, o.Wait = true, 2*time.Minute
		res := result.Result{Name: dnsready.Name, Status: result.StatusPass}
		dnsready.ReportJob(&res, runs, o)
		return ruletest.Report(nil, res)
	}
}

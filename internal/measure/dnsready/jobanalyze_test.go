package dnsready

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// caseARun is case A's job of three on a 20 s negative cache: member i is Running at 1+0.2i s and Ready
// 0.1 s later; every member asks for its peers at its start, each name resolves at 21 s, and the 1 s x2
// back-off client started at 1 s tries at 2, 4, 8, 16 and 32 s: connected at 32 s.
func caseARun(connect bool) JobRun {
	t0 := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	run := JobRun{Variant: VariantCold, Connect: connect, Created: at(0)}
	for i := range 3 {
		start := 1 + 0.2*float64(i)
		rep := &agent.JobPeer{Host: fmt.Sprintf("job-a-%d", i), Started: at(start)}
		for j := range 3 {
			if j == i {
				continue
			}
			name := fmt.Sprintf("job-a-%d.job-a.ns.svc.cluster.local.", j)
			rep.Names = append(rep.Names, agent.DNSWait{Name: name, FirstAttempt: at(start), Resolved: at(21 + 0.1*float64(j)), Attempts: 100, NXDomain: 99})
			if connect {
				rep.Connects = append(rep.Connects, agent.PeerConnect{Name: name, FirstAttempt: at(start), Connected: at(31 + start), Attempts: 6, NXDomain: 5})
			}
		}
		rep.Resolved = at(21.2)
		if i == 2 {
			rep.Resolved = at(21.1)
		}
		if connect {
			rep.Connected = at(31 + start)
		}
		run.Members = append(run.Members, JobMember{Host: rep.Host, Running: at(start), Ready: at(start + 0.1), Endpoint: at(start + 0.2), Report: rep})
	}
	return run
}

func near(d time.Duration, s float64) bool {
	return (d - time.Duration(s*float64(time.Second))).Abs() < time.Millisecond
}

// TestJobFigures: the job's phases from creation and the DNS lag's and the back-off's shares.
func TestJobFigures(t *testing.T) {
	f := caseARun(true).Figures()
	if !near(f.Running, 1.4) || !near(f.Ready, 1.5) || !near(f.Resolvable, 21.2) || !near(f.Connected, 32.4) || !near(f.Startup, 32.4) ||
		!near(f.DNSWait, 19.7) || !near(f.BackoffWait, 11.2) || !f.AllConnected {
		t.Errorf("figures %+v", f)
	}
	f = caseARun(false).Figures()
	if !near(f.Startup, 21.2) || f.AllConnected || f.BackoffWait != 0 {
		t.Errorf("without connecting: %+v", f)
	}
	// A member that never reported: nothing past Running is reached by every member.
	run := caseARun(true)
	run.Members[1].Report = nil
	if f := run.Figures(); f.AllResolvable || f.AllConnected || f.Startup != 0 || !f.AllRunning {
		t.Errorf("with a silent member: %+v", f)
	}
}

// TestJobLags: a name's lag runs from its pod's Ready to when the last member resolved it; with connecting
// on, the back-off is the members' own.
func TestJobLags(t *testing.T) {
	lags, unresolved := caseARun(true).Lags(DefaultBackoff)
	if unresolved != 0 || len(lags) != 3 {
		t.Fatalf("lags %+v unresolved %d", lags, unresolved)
	}
	l := lags[0] // job-a-0: Ready 1.1 s, resolved by members 1 and 2 at 21.0 s, connected to by member 2 at 32.4 s
	if l.Pod != "job-a-0" || !near(l.DNS, 19.9) || !near(l.Endpoint, 0.1) || !near(l.Serving, 19.8) || !near(l.Client, 31.3) || !near(l.Extra, 11.4) {
		t.Errorf("job-a-0 %+v", l)
	}
	// Replayed: the 1 s x2 client that first asked for job-a-0 (member 1, at 1.2 s) tries at 32.2 s.
	lags, _ = caseARun(false).Lags(DefaultBackoff)
	if !near(lags[0].Client, 31.1) || !near(lags[0].Extra, 11.2) {
		t.Errorf("replayed job-a-0 %+v", lags[0])
	}
	// A member whose connection to job-a-0 never succeeded leaves that name out.
	run := caseARun(true)
	run.Members[1].Report.Connects[0].Connected = time.Time{}
	if lags, unresolved := run.Lags(DefaultBackoff); unresolved != 1 || len(lags) != 2 {
		t.Errorf("unconnected: %d lags, %d unresolved", len(lags), unresolved)
	}
}

// TestReportJob: metrics carry the variant; the warm-up's difference is reported when both ran.
func TestReportJob(t *testing.T) {
	cold, warm := caseARun(true), caseARun(true)
	warm.Variant = VariantWarmUp
	warm.Created = warm.Created.Add(-2 * time.Second) // everything 2 s later after creation
	var res result.Result
	res.Status = result.StatusPass
	ReportJob(&res, []JobRun{cold, warm}, JobOptions{Wait: time.Minute, Connect: true, Backoff: DefaultBackoff})
	get := func(n, v string) float64 {
		var l map[string]string
		if v != "" {
			l = map[string]string{"variant": v}
		}
		if m := res.Metric(n, l); m != nil {
			return m.Value
		}
		return -1
	}
	if s := get(MetricJobStartup, VariantCold); s < 32.39 || s > 32.41 {
		t.Errorf("cold start-up %v", s)
	}
	if s := get(MetricJobStartup, VariantWarmUp); s < 34.39 || s > 34.41 {
		t.Errorf("warm-up start-up %v", s)
	}
	if d := get(MetricWarmUpDelta, ""); d < 1.99 || d > 2.01 {
		t.Errorf("delta %v", d)
	}
	if l := get(MetricBackoffExtraP99, VariantCold); l < 11.3 || l > 11.5 {
		t.Errorf("back-off extra p99 %v", l)
	}
	if res.Status != result.StatusPass || len(res.Records) != 7 {
		t.Errorf("status %s %q, %d records", res.Status, res.Reason, len(res.Records))
	}
	cold.Members[2].Report = nil
	var bad result.Result
	ReportJob(&bad, []JobRun{cold}, JobOptions{Wait: time.Minute, Connect: true, Backoff: DefaultBackoff})
	if bad.Status != result.StatusWarn || bad.Metric(MetricJobStartup, map[string]string{"variant": VariantCold}) != nil {
		t.Errorf("a silent member: %s %q", bad.Status, bad.Reason)
	}
}

// TestJobOptions: the defaults are valid; out-of-range values and a poll rate beyond the bound are refused.
func TestJobOptions(t *testing.T) {
	if err := DefaultJobOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, bad := range []func(*JobOptions){
		func(o *JobOptions) { o.Count = 1 },
		func(o *JobOptions) { o.Count = 33 },
		func(o *JobOptions) { o.Count, o.Interval = 32, 100*time.Millisecond }, // 9920 names/s
		func(o *JobOptions) { o.Backoff.Cap = time.Millisecond },
		func(o *JobOptions) { o.Port = 0 },
	} {
		x := DefaultJobOptions()
		bad(&x)
		if x.Validate() == nil {
			t.Errorf("accepted %+v", x)
		}
	}
}

// TestRecordedJobs: the analysis of runs recorded on the lab (TestIntegrationDNSJob with KUBESLOW_RECORD_DIR).
// The healthy lab: every member asked for a peer that was not yet Ready, so its NXDOMAIN was cached the
// default 5 s, and the 1 s x2 back-off then tried at 7 s: ~6.3 s to resolvable, ~8.3 s to connected. With the
// 20 s negative cache: ~20 s of DNS lag, and the back-off's next try at 31 s adds ~11 s: ~32 s. With the
// endpoint controller batching 15 s: ~15 s of lag, and the try at 15 s just missed: ~32 s again.
func TestRecordedJobs(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	for _, c := range []struct {
		lab                               string
		dnsLo, dnsHi, backLo, backHi, top float64
	}{
		{"healthy", 4, 6, 1, 3, 10},
		{"dns-denial-cache", 18, 21, 9, 13, 35},
		{"dns-endpoint-delay", 13, 17, 13, 17, 35},
	} {
		runs, err := ReadJobRuns("testdata/job-" + c.lab + ".json")
		if err != nil || len(runs) != 2 {
			t.Fatalf("%s: %d runs: %v", c.lab, len(runs), err)
		}
		for _, r := range runs {
			f := r.Figures()
			t.Logf("%s %s: %+v", c.lab, r.Variant, f)
			if !f.AllConnected || f.Running > s(3) || f.DNSWait < s(c.dnsLo) || f.DNSWait > s(c.dnsHi) ||
				f.BackoffWait < s(c.backLo) || f.BackoffWait > s(c.backHi) || f.Startup > s(c.top) || f.Startup != f.Connected {
				t.Errorf("%s %s: %+v", c.lab, r.Variant, f)
			}
		}
	}
}

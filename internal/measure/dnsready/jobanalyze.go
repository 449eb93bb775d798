package dnsready

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Variants of the job run.
const (
	VariantCold   = "cold"
	VariantWarmUp = "warm-up"
)

// Metric names of the job benchmark (besides the lags of the per-name metrics above, labelled by variant).
const (
	// MetricJobRunning: Job created -> every member Running; MetricJobReady: -> every member Ready.
	MetricJobRunning = "job_running_seconds"
	MetricJobReady   = "job_ready_seconds"
	// MetricJobResolvable: created -> every member resolved every peer name; MetricJobConnected: -> every
	// member's back-off client connected to every peer (only with connecting on).
	MetricJobResolvable = "job_resolvable_seconds"
	MetricJobConnected  = "job_connected_seconds"
	// MetricJobStartup: created -> the job could start (connected, or resolvable without connecting).
	MetricJobStartup = "job_startup_seconds"
	// MetricJobDNSWait: every member Ready -> every name resolvable (the DNS lag's share of the start-up);
	// MetricJobBackoffWait: resolvable -> connected (the back-off's share).
	MetricJobDNSWait     = "job_dns_wait_seconds"
	MetricJobBackoffWait = "job_backoff_wait_seconds"
	// MetricWarmUpDelta: start-up with the warm-up Service minus without it.
	MetricWarmUpDelta = "warmup_startup_delta_seconds"
)

// JobRun is what one run of the job benchmark recorded (the analysis's input, kept as test data).
type JobRun struct {
	Variant string `json:"variant"`
	Connect bool   `json:"connect"`
	// Created is when the Job was created (kubeslow's clock).
	Created time.Time   `json:"created"`
	Members []JobMember `json:"members"`
	// Stopped is when (after the start of the wait) kubeslow stopped waiting for the members at the end of the
	// run's --budget (zero: it did not).
	Stopped time.Duration `json:"stopped_at_budget,omitempty"`
}

// JobMember is one member: kubeslow's observations (its clock) and the member's own report (its node's clock;
// nil: it never reported).
type JobMember struct {
	Host string `json:"host"`
	Pod  string `json:"pod,omitempty"`
	Node string `json:"node,omitempty"`
	// Running, Ready and Endpoint (its address ready in the Service's EndpointSlice): first seen (zero: never).
	Running  time.Time      `json:"running,omitzero"`
	Ready    time.Time      `json:"ready,omitzero"`
	Endpoint time.Time      `json:"endpoint,omitzero"`
	Report   *agent.JobPeer `json:"report,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// JobFigures are one run's phases, from the Job's creation (zero: not reached by every member).
type JobFigures struct {
	Running, Ready, Resolvable, Connected, Startup time.Duration
	// DNSWait is Ready -> Resolvable, BackoffWait Resolvable -> Connected.
	DNSWait, BackoffWait time.Duration
	// Reached say which phases every member reached.
	AllRunning, AllReady, AllResolvable, AllConnected bool
}

// Targets are the run's names as peers: a name's Asked is the earliest any member asked for it, Resolved
// when the last member could resolve it (zero unless every other member did).
func (r JobRun) Targets() []Target {
	var ts []Target
	for _, peer := range r.Members {
		t := Target{Pod: peer.Host, Ready: peer.Ready, Endpoint: peer.Endpoint}
		all := true
		for _, m := range r.Members {
			if m.Host == peer.Host {
				continue
			}
			w, ok := m.nameWait(peer.Host)
			if !ok {
				all = false
				continue
			}
			t.Name = w.Name
			t.Attempts += w.Attempts
			t.NXDomain += w.NXDomain
			if !w.FirstAttempt.IsZero() && (t.Asked.IsZero() || w.FirstAttempt.Before(t.Asked)) {
				t.Asked = w.FirstAttempt
			}
			if w.Resolved.IsZero() {
				all = false
			} else if w.Resolved.After(t.Resolved) {
				t.Resolved = w.Resolved
			}
		}
		if !all {
			t.Resolved = time.Time{}
		}
		ts = append(ts, t)
	}
	return ts
}

// nameWait is the member's poll of the peer host's name.
func (m JobMember) nameWait(host string) (agent.DNSWait, bool) {
	if m.Report == nil {
		return agent.DNSWait{}, false
	}
	for _, w := range m.Report.Names {
		if firstLabel(w.Name) == host {
			return w, true
		}
	}
	return agent.DNSWait{}, false
}

// connect is the member's back-off connection to the peer host.
func (m JobMember) connect(host string) (agent.PeerConnect, bool) {
	if m.Report == nil {
		return agent.PeerConnect{}, false
	}
	for _, c := range m.Report.Connects {
		if firstLabel(c.Name) == host {
			return c, true
		}
	}
	return agent.PeerConnect{}, false
}

func firstLabel(name string) string {
	for i := range len(name) {
		if name[i] == '.' {
			return name[:i]
		}
	}
	return name
}

// Lags are the per-name lags. With connecting on, the back-off is the members' real one: a name's Client
// is Ready -> the last member connected to it and Extra the longest any member connected after it could
// resolve the name; without, the back-off b is replayed.
func (r JobRun) Lags(b Backoff) (lags []Lags, unresolved int) {
	lags, unresolved = Analyze(r.Targets(), b)
	if !r.Connect {
		return lags, unresolved
	}
	var out []Lags
	for _, l := range lags {
		peer := r.member(l.Pod)
		var last time.Time
		var extra time.Duration
		ok := true
		for _, m := range r.Members {
			if m.Host == l.Pod {
				continue
			}
			c, found := m.connect(l.Pod)
			w, _ := m.nameWait(l.Pod)
			if !found || c.Connected.IsZero() {
				ok = false
				break
			}
			last = stats.Later(last, c.Connected)
			if !w.Resolved.IsZero() {
				extra = max(extra, c.Connected.Sub(w.Resolved))
			}
		}
		if !ok {
			unresolved++
			continue
		}
		l.Client, l.Extra = last.Sub(peer.Ready), extra
		out = append(out, l)
	}
	return out, unresolved
}

func (r JobRun) member(host string) JobMember {
	for _, m := range r.Members {
		if m.Host == host {
			return m
		}
	}
	return JobMember{}
}

// Figures are the run's phases.
func (r JobRun) Figures() JobFigures {
	f := JobFigures{AllRunning: len(r.Members) > 0, AllReady: len(r.Members) > 0, AllResolvable: len(r.Members) > 0, AllConnected: r.Connect && len(r.Members) > 0}
	var running, ready, resolved, connected time.Time
	for _, m := range r.Members {
		f.AllRunning = f.AllRunning && !m.Running.IsZero()
		f.AllReady = f.AllReady && !m.Ready.IsZero()
		running, ready = stats.Later(running, m.Running), stats.Later(ready, m.Ready)
		if m.Report == nil || m.Report.Resolved.IsZero() {
			f.AllResolvable = false
		} else {
			resolved = stats.Later(resolved, m.Report.Resolved)
		}
		if m.Report == nil || m.Report.Connected.IsZero() {
			f.AllConnected = false
		} else {
			connected = stats.Later(connected, m.Report.Connected)
		}
	}
	since := func(ok bool, t time.Time) time.Duration {
		if !ok {
			return 0
		}
		return t.Sub(r.Created)
	}
	f.Running, f.Ready, f.Resolvable, f.Connected = since(f.AllRunning, running), since(f.AllReady, ready), since(f.AllResolvable, resolved), since(f.AllConnected, connected)
	if f.AllReady && f.AllResolvable {
		f.DNSWait = max(0, f.Resolvable-f.Ready)
	}
	if f.AllResolvable && f.AllConnected {
		f.BackoffWait = max(0, f.Connected-f.Resolvable)
	}
	f.Startup = f.Resolvable
	if r.Connect {
		f.Startup = f.Connected
	}
	return f
}

// ReportJob turns the runs into metrics (labelled variant=...) and records (pure).
func ReportJob(res *result.Result, runs []JobRun, o JobOptions) {
	var problems, cut []string
	reported := 0 // members of the runs cut by the budget that reported
	startup := map[string]JobFigures{}
	for _, run := range runs {
		labels := map[string]string{"variant": run.Variant}
		f := run.Figures()
		startup[run.Variant] = f
		lags, unresolved := run.Lags(o.Backoff)
		unreported := 0
		for _, m := range run.Members {
			if m.Report == nil {
				unreported++
			}
		}
		res.Metrics = append(res.Metrics,
			result.Metric{Name: "pods", Unit: "count", Value: float64(len(run.Members)), Labels: labels},
			result.Metric{Name: "unresolved", Unit: "count", Value: float64(unresolved), Labels: labels},
			result.Metric{Name: "unreported", Unit: "count", Value: float64(unreported), Labels: labels})
		switch {
		case (unresolved > 0 || unreported > 0 || !f.AllRunning) && run.Stopped > 0:
			// kubeslow's own budget ended the wait: said, but not the cluster's fault.
			cut = append(cut, fmt.Sprintf("%s: %d of %d members did not report, %d names not resolved (or connected) by every member%s",
				run.Variant, unreported, len(run.Members), unresolved, measure.Bound{D: run.Stopped, Cut: true}.Note()))
			reported += len(run.Members) - unreported
		case unresolved > 0 || unreported > 0 || !f.AllRunning:
			problems = append(problems, fmt.Sprintf("%s: %d of %d members did not report, %d names not resolved (or connected) by every member within %s",
				run.Variant, unreported, len(run.Members), unresolved, o.Wait))
		}
		res.Metrics = append(res.Metrics, lagMetrics(lags, labels)...)
		for _, p := range []struct {
			name string
			ok   bool
			d    time.Duration
		}{
			{MetricJobRunning, f.AllRunning, f.Running}, {MetricJobReady, f.AllReady, f.Ready}, {MetricJobResolvable, f.AllResolvable, f.Resolvable},
			{MetricJobConnected, f.AllConnected, f.Connected}, {MetricJobStartup, f.Startup > 0, f.Startup},
			{MetricJobDNSWait, f.AllReady && f.AllResolvable, f.DNSWait}, {MetricJobBackoffWait, f.AllConnected && f.AllResolvable, f.BackoffWait},
		} {
			if p.ok {
				res.Metrics = append(res.Metrics, result.Metric{Name: p.name, Unit: "seconds", Value: p.d.Seconds(), Labels: labels})
			}
		}
		res.Records = append(res.Records, memberRecords(run)...)
	}
	if c, w := startup[VariantCold], startup[VariantWarmUp]; c.Startup > 0 && w.Startup > 0 {
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricWarmUpDelta, Unit: "seconds", Value: (w.Startup - c.Startup).Seconds()})
	}
	back := "replayed"
	if o.Connect {
		back = "measured (each member's client)"
	}
	res.Records = append(res.Records, result.Record{ID: "client", Labels: map[string]string{
		"backoff": fmt.Sprintf("%s x%g, cap %s, %s", o.Backoff.Base, o.Backoff.Factor, o.Backoff.Cap, back),
		"clocks":  "Running, Ready, endpoint and created times are kubeslow's clock (watch events), resolution and connection times the members' node clocks",
	}})
	if len(problems) > 0 {
		sort.Strings(problems)
		res.Status, res.Reason = result.StatusWarn, fmt.Sprint(problems)
	}
	if len(cut) > 0 {
		res.Reason = strings.TrimPrefix(res.Reason+"; "+strings.Join(cut, "; "), "; ")
		if len(problems) == 0 && reported == 0 && len(cut) == len(runs) {
			res.Status = result.StatusSkip // no member reported before the budget ended: nothing measured
		}
	}
}

// memberRecords are one record per member: its phases from the Job's creation.
func memberRecords(run JobRun) []result.Record {
	var out []result.Record
	for _, m := range run.Members {
		rec := result.Record{ID: run.Variant + "/" + m.Host, Labels: map[string]string{"variant": run.Variant, "pod": m.Pod, "node": m.Node}, Values: map[string]float64{}}
		set := func(k string, t time.Time) {
			if !t.IsZero() {
				rec.Values[k] = t.Sub(run.Created).Seconds()
			}
		}
		set("running_seconds", m.Running)
		set("ready_seconds", m.Ready)
		set("endpoint_seconds", m.Endpoint)
		if m.Error != "" {
			rec.Labels["error"] = m.Error
		}
		if p := m.Report; p != nil {
			set("started_seconds", p.Started)
			set("resolvable_seconds", p.Resolved)
			set("connected_seconds", p.Connected)
			var polls, nx, connects, cnx float64
			for _, w := range p.Names {
				polls, nx = polls+float64(w.Attempts), nx+float64(w.NXDomain)
			}
			for _, c := range p.Connects {
				connects, cnx = connects+float64(c.Attempts), cnx+float64(c.NXDomain)
			}
			rec.Values["name_polls"], rec.Values["nxdomain_answers"] = polls, nx
			if run.Connect {
				rec.Values["connect_attempts"], rec.Values["connect_nxdomain"] = connects, cnx
			}
			rec.Values["accepted"] = float64(p.Accepted)
		}
		out = append(out, rec)
	}
	return out
}

// ReadJobRuns reads runs recorded as JSON (a list of JobRun).
func ReadJobRuns(path string) ([]JobRun, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var runs []JobRun
	if err := json.Unmarshal(b, &runs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return runs, nil
}

package promwindow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/measure/promwindow/timeline"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/internal/source/promql"
	"github.com/kubeslow/kubeslow/internal/source/promql/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func fixture(t *testing.T, name string) []byte {
	return promtest.ReadScrape(t, "../../source/prom/testdata/"+name)
}

// storm is two real scrapes of the lab's apiserver during the conflict storm and two of its etcd, placed a
// minute apart three hours ago (promtool backfills only whole past blocks).
type storm struct {
	t0, t1                   time.Time
	api0, api1, etcd0, etcd1 []byte
	apiLabels, etcdLabels    map[string]string
}

func newStorm(t *testing.T) storm {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	return storm{t0: t0, t1: t0.Add(time.Minute),
		api0: fixture(t, "apiserver-metrics-conflict-storm-1.txt.gz"), api1: fixture(t, "apiserver-metrics-conflict-storm-2.txt.gz"),
		etcd0: fixture(t, "etcd-metrics-1.txt"), etcd1: fixture(t, "etcd-metrics-2.txt"),
		apiLabels:  map[string]string{"job": "kube-apiserver", "instance": "198.19.255.1:6443"},
		etcdLabels: map[string]string{"job": "kube-etcd", "instance": "198.19.255.1:2379"}}
}

func (s storm) scrapes() []promtest.Scrape {
	return []promtest.Scrape{{At: s.t0, Text: s.api0, Labels: s.apiLabels}, {At: s.t1, Text: s.api1, Labels: s.apiLabels},
		{At: s.t0, Text: s.etcd0, Labels: s.etcdLabels}, {At: s.t1, Text: s.etcd1, Labels: s.etcdLabels}}
}

func parse(t *testing.T, b []byte, at time.Time) *prom.Snapshot {
	t.Helper()
	s, err := prom.Parse(bytes.NewReader(b), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func source(t *testing.T, url string, from, to time.Time, jobs map[string]string) *Source {
	t.Helper()
	c, err := promql.New(promql.Options{URL: url, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w, err := promql.NewWindow(from, to, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return NewSource(c, w, jobs, check.Rules())
}

// key identifies a metric without the label naming the Prometheus window.
func key(m result.Metric) string {
	var ls []string
	for k, v := range m.Labels {
		if k != "prometheus" {
			ls = append(ls, k+"="+v)
		}
	}
	sort.Strings(ls)
	return m.Name + "{" + strings.Join(ls, ",") + "}"
}

func sameMetrics(t *testing.T, live, fromProm result.Result) {
	t.Helper()
	want := map[string]float64{}
	for _, m := range live.Metrics {
		want[key(m)] = m.Value
	}
	got := map[string]float64{}
	for _, m := range fromProm.Metrics {
		got[key(m)] = m.Value
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: live %g, missing from the Prometheus result", k, v)
			continue
		}
		if math.Abs(g-v) > 1e-6*math.Max(1, math.Abs(v)) {
			t.Errorf("%s: live %g, Prometheus %g", k, v, g)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: only in the Prometheus result", k)
		}
	}
	// A quantile estimated within a bucket is estimated within the same bucket from Prometheus.
	bounds := map[string]result.Bounds{}
	for _, m := range fromProm.Metrics {
		if m.Bounds != nil {
			bounds[key(m)] = *m.Bounds
		}
	}
	for _, m := range live.Metrics {
		if b, ok := bounds[key(m)]; (m.Bounds != nil) != ok || (ok && b != *m.Bounds) {
			t.Errorf("%s: live bounds %+v, Prometheus %+v (%v)", key(m), m.Bounds, b, ok)
		}
	}
}

func fired(rep *result.Report) []string {
	_, evals := rule.Evaluate(rep, check.Rules())
	var out []string
	for _, e := range evals {
		if e.Status == result.RuleFired {
			out = append(out, e.ID)
		}
	}
	return out
}

func run(t *testing.T, m measure.Measurement) result.Result {
	t.Helper()
	res := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, m)
	if !res.Status.Measured() {
		t.Fatalf("%s: %s %s", m.Name(), res.Status, res.Reason)
	}
	return res
}

// TestSameResultsAsLive backfills a real Prometheus with the scrapes the live measurements analyse and checks
// that the Prometheus-backed measurements produce the same metrics (names, labels, values) and so the same
// rules fire on the same thresholds.
func TestSameResultsAsLive(t *testing.T) {
	s := newStorm(t)
	// The recorded apiserver called no admission webhook: a mutating one whose 120 calls in the minute all
	// waited out a 2 s timeout and failed open, and a quick validating one, are added to its scrapes.
	s.api0 = append(append([]byte(nil), s.api0...), webhookText(0)...)
	s.api1 = append(append([]byte(nil), s.api1...), webhookText(1)...)
	url := promtest.Start(t, s.scrapes())
	src := source(t, url, s.t0, s.t1, nil)

	liveAPI := apislo.Analyze(parse(t, s.api0, s.t0), parse(t, s.api1, s.t1))
	liveEtcd := etcdhealth.Analyze(parse(t, s.etcd0, s.t0), parse(t, s.etcd1, s.t1), nil)
	var kept []result.Metric
	for _, m := range liveEtcd.Metrics {
		if m.Name != "alarm_nospace" && m.Name != "alarms" { // alarms are not metrics: absent over a past window
			kept = append(kept, m)
		}
	}
	liveEtcd.Metrics = kept

	api := run(t, NewAPI(src))
	etcd := run(t, NewEtcd(src))
	sameMetrics(t, liveAPI, api)
	sameMetrics(t, liveEtcd, etcd)
	if w := api.Metric(apislo.MetricWebhookP99, map[string]string{"name": "hung.example.com", "type": "admit"}); w == nil || w.Value <= 2 {
		t.Fatalf("the hung webhook's p99 = %+v, want its timeout's bucket", w)
	}
	if c := api.Metric("conflicts_per_minute", map[string]string{"resource": "ipamblocks", "verb": "PUT"}); c == nil || c.Value <= 60 {
		t.Fatalf("409s on ipamblocks = %+v, want the storm's rate", c)
	}

	liveRep := &result.Report{Results: []result.Result{liveAPI, liveEtcd}}
	promRep := &result.Report{Results: []result.Result{api, etcd}}
	lf, pf := fired(liveRep), fired(promRep)
	if strings.Join(lf, ",") != strings.Join(pf, ",") || len(lf) == 0 {
		t.Fatalf("live fired %v, Prometheus fired %v", lf, pf)
	}
	// etcd's alarms are not metrics: over a past window NOSPACE is not evaluated, never clear.
	_, evals := rule.Evaluate(promRep, check.Rules())
	for _, e := range evals {
		if e.ID == "KS-ETCD-NOSPACE" && (e.Status != result.RuleNotEvaluated || !strings.Contains(e.Reason, "absent")) {
			t.Fatalf("KS-ETCD-NOSPACE from Prometheus: %s (%s)", e.Status, e.Reason)
		}
	}
	// Every metric says the job and window it rests on.
	for _, m := range api.Metrics {
		if !strings.Contains(m.Labels["prometheus"], `job "kube-apiserver"`) {
			t.Fatalf("metric %s without its source: %v", m.Name, m.Labels)
		}
	}
	// Discovery found the jobs by their series, whatever they are called, and the absent roles are listed.
	srcRes := run(t, &Sources{src: src})
	if got := src.Target("apiserver").Job; got != "kube-apiserver" {
		t.Fatalf("apiserver job = %q", got)
	}
	if !strings.Contains(srcRes.Reason, "absent: scheduler, controller-manager, kubelet, cadvisor, node-exporter, coredns") {
		t.Fatalf("sources: %s", srcRes.Reason)
	}
	q, n := src.Client.Cost()
	if q == 0 || q > promql.DefaultMaxQueries || n == 0 {
		t.Fatalf("cost %d queries, %d samples", q, n)
	}
}

// TestAbsentIsNotEvaluated: a Prometheus without etcd skips etcd.health with the series it looked for, so the
// etcd rules are "not evaluated", never "clear"; the NOSPACE alarm, never a metric, is not evaluated either.
func TestAbsentIsNotEvaluated(t *testing.T) {
	s := newStorm(t)
	url := promtest.Start(t, []promtest.Scrape{{At: s.t0, Text: s.api0, Labels: s.apiLabels}, {At: s.t1, Text: s.api1, Labels: s.apiLabels}})
	src := source(t, url, s.t0, s.t1, nil)
	etcd := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, NewEtcd(src))
	if etcd.Status != result.StatusSkip || !strings.Contains(etcd.Reason, "etcd_server_has_leader is absent") {
		t.Fatalf("etcd.health without etcd: %s %s", etcd.Status, etcd.Reason)
	}
	rep := &result.Report{Results: []result.Result{run(t, NewAPI(src)), etcd}}
	_, evals := rule.Evaluate(rep, check.Rules())
	for _, e := range evals {
		// KS-ETCD-STALL rests on kubeslow's own /readyz probe (controlplane.availability), not on etcd's series.
		if strings.HasPrefix(e.ID, "KS-ETCD-") && e.ID != "KS-ETCD-EVENTS" && e.ID != "KS-ETCD-STALL" && (e.Status != result.RuleNotEvaluated || !strings.Contains(e.Reason, "etcd_server_has_leader")) {
			t.Errorf("%s: %s (%s), want not evaluated naming the absent series", e.ID, e.Status, e.Reason)
		}
	}
}

// TestJobOverride: --prometheus-job picks the job; one that lacks the role's series makes the role absent.
func TestJobOverride(t *testing.T) {
	s := newStorm(t)
	url := promtest.Start(t, s.scrapes())
	src := source(t, url, s.t0, s.t1, map[string]string{"etcd": "no-such-job"})
	etcd := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, NewEtcd(src))
	if etcd.Status != result.StatusSkip || !strings.Contains(etcd.Reason, `"no-such-job"`) {
		t.Fatalf("etcd.health with a wrong job: %s %s", etcd.Status, etcd.Reason)
	}
}

// histText renders one classic histogram series in the text format from per-bucket (non-cumulative) counts.
func histText(b *strings.Builder, name, labels string, bounds []float64, counts []float64, sum float64) {
	cum := 0.0
	for i, ub := range bounds {
		cum += counts[i]
		le := fmt.Sprintf("%g", ub)
		if math.IsInf(ub, 1) {
			le = "+Inf"
		}
		sep := ""
		if labels != "" {
			sep = ","
		}
		fmt.Fprintf(b, "%s_bucket{%s%sle=%q} %g\n", name, labels, sep, le, cum)
	}
	fmt.Fprintf(b, "%s_sum{%s} %g\n%s_count{%s} %g\n", name, labels, sum, name, labels, cum)
}

// webhookText is the admission webhook families of the k-th minute's scrape (k = 0, 1): a mutating webhook whose
// calls all take its 2 s timeout and fail open (120 a minute), a validating one answering in ~10 ms (300).
func webhookText(k float64) string {
	bounds := []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 25, math.Inf(1)}
	hung, quick := make([]float64, len(bounds)), make([]float64, len(bounds))
	hung[5], quick[1] = 1000+120*k, 5000+300*k
	var b strings.Builder
	b.WriteString("# TYPE apiserver_admission_webhook_admission_duration_seconds histogram\n")
	histText(&b, "apiserver_admission_webhook_admission_duration_seconds", `name="hung.example.com",operation="CREATE",rejected="false",type="admit"`, bounds, hung, 2.01*hung[5])
	histText(&b, "apiserver_admission_webhook_admission_duration_seconds", `name="quick.example.com",operation="CREATE",rejected="false",type="validating"`, bounds, quick, 0.01*quick[1])
	b.WriteString("# TYPE apiserver_admission_webhook_fail_open_count counter\n")
	fmt.Fprintf(&b, "apiserver_admission_webhook_fail_open_count{name=\"hung.example.com\",type=\"admit\"} %g\n", hung[5])
	return b.String()
}

// degrading makes scrapes every 5 s for 20 minutes: etcd's WAL fsyncs go from 1.5 ms to 50 ms at etcdAt, GET
// pods from 30 ms to 3 s at apiAt.
func degrading(t0, etcdAt, apiAt time.Time) []promtest.Scrape {
	fsyncBounds := []float64{0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, math.Inf(1)}
	apiBounds := []float64{0.05, 0.1, 0.5, 1, 2, 4, 8, math.Inf(1)}
	fsync := make([]float64, len(fsyncBounds))
	lat := make([]float64, len(apiBounds))
	var fsyncSum, latSum, requests float64
	var out []promtest.Scrape
	for at := t0; !at.After(t0.Add(20 * time.Minute)); at = at.Add(5 * time.Second) {
		if at.Before(etcdAt) {
			fsync[1] += 50
			fsyncSum += 50 * 0.0015
		} else {
			fsync[6] += 50
			fsyncSum += 50 * 0.05
		}
		if at.Before(apiAt) {
			lat[0] += 20
			latSum += 20 * 0.03
		} else {
			lat[5] += 20
			latSum += 20 * 3
		}
		requests += 20
		var e, a strings.Builder
		e.WriteString("# TYPE etcd_server_has_leader gauge\netcd_server_has_leader 1\n# TYPE etcd_disk_wal_fsync_duration_seconds histogram\n")
		histText(&e, "etcd_disk_wal_fsync_duration_seconds", "", fsyncBounds, fsync, fsyncSum)
		a.WriteString("# TYPE apiserver_request_total counter\n")
		fmt.Fprintf(&a, "apiserver_request_total{code=\"200\",group=\"\",resource=\"pods\",verb=\"GET\"} %g\n", requests)
		a.WriteString("# TYPE apiserver_request_sli_duration_seconds histogram\n")
		histText(&a, "apiserver_request_sli_duration_seconds", `resource="pods",scope="resource",subresource="",verb="GET"`, apiBounds, lat, latSum)
		out = append(out, promtest.Scrape{At: at, Text: []byte(e.String()), Labels: map[string]string{"job": "etcd", "instance": "e:2379"}},
			promtest.Scrape{At: at, Text: []byte(a.String()), Labels: map[string]string{"job": "apiserver", "instance": "a:6443"}})
	}
	return out
}

// TestOnsetOrder: etcd's fsyncs slow down 40 s before the API does; the profiles mark each onset and
// KS-PROM-ORDER says etcd went first and the API 40 s later (within a profile step and a scrape).
func TestOnsetOrder(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	etcdAt, apiAt := t0.Add(10*time.Minute), t0.Add(10*time.Minute+40*time.Second)
	url := promtest.Start(t, degrading(t0, etcdAt, apiAt))
	src := source(t, url, t0, t0.Add(20*time.Minute), nil)
	api, etcd := run(t, NewAPI(src)), run(t, NewEtcd(src))
	tl := &Timeline{src: src}
	res := run(t, tl)
	if len(res.Records) != 2 {
		t.Fatalf("onsets %+v", res.Records)
	}
	first, second := res.Records[0], res.Records[1]
	if first.Labels["metric"] != "wal_fsync_p99" || second.Labels["metric"] != "latency_p99_single" {
		t.Fatalf("order %s then %s", first.ID, second.ID)
	}
	for _, c := range []struct {
		got, want time.Time
	}{{first.Times["onset"], etcdAt}, {second.Times["onset"], apiAt}} {
		if d := c.got.Sub(c.want); d < 0 || d > src.Window.Step+5*time.Second {
			t.Errorf("onset %s, change at %s", c.got.Format(time.TimeOnly), c.want.Format(time.TimeOnly))
		}
	}
	fs, _ := rule.Evaluate(&result.Report{Results: []result.Result{res}}, timeline.Rules())
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "etcd WAL fsync p99 crossed") || !strings.Contains(fs[0].Summary, "after") {
		t.Fatalf("findings %+v", fs)
	}
	t.Log(fs[0].Summary)
	lag := second.Times["onset"].Sub(first.Times["onset"])
	if lag < 30*time.Second || lag > 50*time.Second {
		t.Fatalf("lag %s, want ~40s", lag)
	}
	// The profiles mark the level change too, and the whole-window rules fire as they would live.
	changed := false
	for _, s := range etcd.Series {
		for _, m := range s.Marks {
			changed = changed || (strings.HasPrefix(m.Label, "change:") && m.T.Sub(etcdAt).Abs() <= src.Window.Rate+src.Window.Step)
		}
	}
	if !changed {
		t.Errorf("no change mark near %s: %+v", etcdAt.Format(time.TimeOnly), etcd.Series)
	}
	got := fired(&result.Report{Results: []result.Result{api, etcd}})
	if strings.Join(got, ",") != "KS-API-LATENCY,KS-ETCD-FSYNC" {
		t.Fatalf("fired %v", got)
	}
	// The HTML report draws the profiles with their onset marks.
	rep := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, Results: []result.Result{api, etcd, res}, Findings: fs}
	var html bytes.Buffer
	if err := report.WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	// The page's chart data (the JSON its script draws): the profiles' time charts, with the onset and change
	// marks on them.
	h := html.String()
	const open = `<script type="application/json" id="kubeslow-charts">`
	i := strings.Index(h, open)
	j := strings.Index(h[i+1:], "</script>")
	if i < 0 || j < 0 {
		t.Fatal("HTML: no chart data")
	}
	var charts []struct {
		Kind   string `json:"kind"`
		Panels []struct {
			Lines []struct {
				Label string `json:"label"`
			} `json:"lines"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(h[i+len(open):i+1+j]), &charts); err != nil {
		t.Fatalf("HTML chart data: %v", err)
	}
	times, onset, change := 0, false, false
	for _, c := range charts {
		if c.Kind != "time" {
			continue
		}
		times++
		for _, p := range c.Panels {
			for _, l := range p.Lines {
				onset = onset || strings.HasPrefix(l.Label, "etcd WAL fsync p99 > 0.01 s at")
				change = change || strings.HasPrefix(l.Label, "change: ")
			}
		}
	}
	if times < 2 || !onset || !change {
		t.Fatalf("HTML: %d time charts, onset and change marks drawn: %v %v", times, onset, change)
	}
}

func TestParseJobs(t *testing.T) {
	got, err := ParseJobs([]string{"etcd=kube-etcd", "apiserver=apiserver"})
	if err != nil || got["etcd"] != "kube-etcd" || got["apiserver"] != "apiserver" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"etcd", "etcd=", "nosuch=x", `etcd=a"b`, "=x"} {
		if _, err := ParseJobs([]string{bad}); err == nil {
			t.Errorf("ParseJobs(%q): no error", bad)
		}
	}
}

// FuzzParseJobs: whatever the flag says, a job either parses into a known role with a value that is safe inside
// a PromQL string, or is refused.
func FuzzParseJobs(f *testing.F) {
	for _, s := range []string{"etcd=kube-etcd", "node-exporter=node", "x=y", `coredns=a"b`, "kubelet=a\\b", "apiserver==", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseJobs([]string{s})
		if err != nil {
			return
		}
		for role, job := range got {
			if _, ok := roleByName(role); !ok || job == "" || strings.ContainsAny(job, "\"\\\n") {
				t.Fatalf("ParseJobs(%q) = %q=%q", s, role, job)
			}
		}
	})
}

func roleByName(name string) (Role, bool) {
	for _, r := range Roles {
		if r.Name == name {
			return r, true
		}
	}
	return Role{}, false
}

// TestAPILatencySplit: an apiserver whose latency answer (verb × resource × subresource × scope × le) passes the
// answer limit is read verb by verb, and a verb resource by resource, with the same result as in one query;
// the extra queries are granted to the budget. (A lower answer limit stands in for the 2,000 of a real run.)
func TestAPILatencySplit(t *testing.T) {
	s := newStorm(t)
	url := promtest.Start(t, s.scrapes())
	whole := source(t, url, s.t0, s.t1, nil)
	want := run(t, NewAPI(whole))
	wq, _ := whole.Client.Cost()
	v, err := whole.Client.Instant(context.Background(), `count(sum by (verb, resource, subresource, scope, le) (apiserver_request_sli_duration_seconds_bucket{verb!~"WATCH|WATCHLIST|CONNECT"}))`, s.t1)
	if err != nil || len(v) != 1 {
		t.Fatal(v, err)
	}
	n := int(v[0].Value)
	for _, limit := range []int{n - 1, n / 4} {
		c, err := promql.New(promql.Options{URL: url, MaxSeries: limit, MaxQueries: wq})
		if err != nil {
			t.Fatal(err)
		}
		split := NewSource(c, whole.Window, nil, check.Rules())
		got := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, NewAPI(split))
		if !got.Status.Measured() {
			t.Fatalf("limit %d: %s %s", limit, got.Status, got.Reason)
		}
		sameMetrics(t, want, got)
		q, _ := c.Cost()
		t.Logf("latency answer of %d series, limit %d: %d queries (%d in one)", n, limit, q, wq)
	}
}

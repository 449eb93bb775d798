package promwindow

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// ControlPlane is controlplane.usage from Prometheus: the CPU kube-apiserver and etcd used over the window
// (their own process_cpu_seconds_total), the busiest stretch of it (a profile), and the cores they may use,
// from the first source that has them: the cores stated by --prometheus-control-plane-cores, cAdvisor's CPU
// quota of their cgroups (container_spec_cpu_quota / container_spec_cpu_period), or node_exporter's CPU count
// on the hosts they run on. cAdvisor's CFS throttling of their containers is the kernel's side of it, where
// scraped. KS-CP-SATURATED reads it on its threshold; without a source of the cores its saturation is absent,
// so the rule is not evaluated.
type ControlPlane struct{ src *Source }

// NewControlPlane returns the measurement.
func NewControlPlane(s *Source) *ControlPlane { return &ControlPlane{src: s} }

// Name implements measure.Measurement: the live measurement's name, so the same rules read it.
func (*ControlPlane) Name() string { return cpusage.Name }

// Description implements measure.Measurement.
func (c *ControlPlane) Description() string {
	return fmt.Sprintf("kube-apiserver and etcd CPU vs the cores they have (stated, cAdvisor quota or node_exporter CPUs), from Prometheus over %s", c.src.Window)
}

// DefaultControlPlaneCgroups select the control plane's cgroups in cAdvisor's series where no
// --prometheus-control-plane-cgroup says otherwise: kubeadm's static pods' containers. A control plane kept
// elsewhere (k3s's or rke2's server in a systemd unit, a raw cgroup such as the lab's) is named by the user with
// cAdvisor's labels of it (e.g. id="/system.slice/k3s.service"). They are read from every job that has them (a
// cAdvisor of the control-plane nodes need not be the one discovery picked), each cgroup once.
var DefaultControlPlaneCgroups = []string{`namespace="kube-system",container=~"kube-apiserver|etcd"`}

// cgroups are the selectors of the control plane's cgroups this source reads.
func (s *Source) cgroups() []string {
	if len(s.ControlPlaneCgroups) > 0 {
		return s.ControlPlaneCgroups
	}
	return DefaultControlPlaneCgroups
}

// ValidCgroupSelector reports whether sel is a list of PromQL label matchers that can go between braces.
func ValidCgroupSelector(sel string) error {
	if strings.TrimSpace(sel) == "" || strings.ContainsAny(sel, "{}\n") || !strings.Contains(sel, "=") {
		return fmt.Errorf("%q: want PromQL label matchers, e.g. id=\"/system.slice/k3s.service\"", sel)
	}
	return nil
}

// cgroupsQuery is fn(family{sel}) for each of ControlPlaneCgroups, deduplicated by cgroup (max by id, pod,
// container: a second job scraping the same cAdvisor repeats its series) and joined with or; fn gets the
// selector and returns the expression.
func (s *Source) cgroupsQuery(family string, fn func(sel string) string) string {
	var parts []string
	for _, c := range s.cgroups() {
		parts = append(parts, fmt.Sprintf("max by (id, pod, container) (%s)", fn(family+"{"+c+"}")))
	}
	return strings.Join(parts, " or ")
}

// cgroupsText names the cgroups read, for reasons and labels.
func (s *Source) cgroupsText() string { return "{" + strings.Join(s.cgroups(), "} or {") + "}" }

// Sources of the cores available, as the finding names them.
const (
	CoresStated   = "stated by --prometheus-control-plane-cores"
	CoresQuota    = "CPU quota of the control plane's cgroups (cAdvisor)"
	CoresNodeCPUs = "node_exporter CPUs of the control-plane host"
)

// Run implements measure.Measurement.
func (c *ControlPlane) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	s := c.src
	if err := s.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	apiJob, apiOK := s.Selector("apiserver")
	etcdJob, etcdOK := s.Selector("etcd")
	if !apiOK {
		return result.Result{}, measure.Skipf("%s", s.absentReason("apiserver"))
	}
	res := result.Result{Name: cpusage.Name, Status: result.StatusPass, Start: s.Window.From, End: s.Window.To,
		// The Go scheduler's latency is a histogram of the live scrapes only: its absence leaves the API tier's
		// saturation rule not evaluated, never clear.
		Absent: []result.Absence{{Metric: cpusage.MetricGoSchedP99, Series: "go_sched_latencies_seconds", Reason: "not read from Prometheus (a live run reads it)"}}}
	add := func(name, unit string, v float64, labels map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: labels})
	}
	var notes []string
	jobs := []struct{ comp, sel string }{{cpusage.APIServer, apiJob}}
	if etcdOK {
		jobs = append(jobs, struct{ comp, sel string }{cpusage.Etcd, etcdJob})
	} else {
		notes = append(notes, "etcd is not scraped: its CPU is not counted ("+s.absentReason("etcd")+")")
	}
	// The window's average per component and instance (one query); the instances name the control-plane hosts.
	var avg []string
	for _, j := range jobs {
		avg = append(avg, fmt.Sprintf(`label_replace(sum by (instance) (rate(%s[%s])), "component", %q, "", "")`, selector("process_cpu_seconds_total", j.sel), s.window(), j.comp))
	}
	v, err := s.Client.Instant(ctx, strings.Join(avg, " or "), s.Window.To)
	if err != nil {
		return res, err
	}
	used := map[string]float64{}
	for _, smp := range v {
		if f := float64(smp.Value); !math.IsNaN(f) {
			used[string(smp.Metric["component"])] += f
		}
	}
	// The control-plane hosts are the instances Prometheus scraped them at, answered or not.
	hosts, err := c.hosts(ctx, jobs)
	if err != nil {
		return res, err
	}
	if _, ok := used[cpusage.APIServer]; !ok {
		t := s.Target("apiserver")
		if !t.Silent {
			return res, measure.Skipf("%s has no process_cpu_seconds_total of kube-apiserver (job %s) in %s", s.Client.URL(), jobValue(apiJob), s.Window)
		}
		notes = append(notes, "kube-apiserver "+t.Silence()+" in the window: its own CPU count is missing, the kernel's count of its cgroup stands for it")
	}
	total := 0.0
	for _, j := range jobs {
		if u, ok := used[j.comp]; ok {
			add(cpusage.MetricCPUCores, "cores", u, map[string]string{"component": j.comp})
			total += u
		}
	}
	if len(used) > 0 {
		add(cpusage.MetricCPUCores, "cores", total, map[string]string{"component": cpusage.All})
	}

	cores, source, err := c.cores(ctx, hosts)
	if err != nil {
		return res, err
	}
	if cores > 0 {
		add(cpusage.MetricCoresAvailable, "cores", cores, map[string]string{"source": source})
	} else {
		series := fmt.Sprintf("container_spec_cpu_quota%s, node_cpu_seconds_total of %s", c.src.cgroupsText(), strings.Join(slices.Sorted(maps.Keys(hosts)), ", "))
		reason := "neither cAdvisor's CPU quota of the kube-apiserver and etcd containers nor a node_exporter on their hosts is scraped " +
			"(a managed control plane); state the cores with --prometheus-control-plane-cores"
		res.Absent = append(res.Absent, result.Absence{Metric: cpusage.MetricCoresAvailable, Series: series, Reason: reason},
			result.Absence{Metric: cpusage.MetricCPUSaturation, Series: series, Reason: reason})
	}
	throttled, err := c.throttling(ctx, &notes)
	if err != nil {
		return res, err
	}
	gaps, err := c.scrapeGaps(ctx, jobs)
	if err != nil {
		return res, err
	}
	pressure, err := c.pressure(ctx, hosts)
	if err != nil {
		return res, err
	}
	// The busiest stretch: the profiles of their summed CPU by their own count (addCPUProfile: bounded by the
	// scrapes' own times) and by the kernel's count of their cgroups (cAdvisor's, scraped from the kubelet: it
	// stays right when the starved processes miss their scrapes), whose busiest BusiestSteps points FromSteps
	// reads as the live measurement reads its steps (and bounds by the cores).
	thr := math.Inf(1)
	if cores > 0 {
		thr = cpusage.SaturationThreshold * cores
	}
	if err := c.addCPUProfile(ctx, &res, jobs, thr); err != nil {
		return res, err
	}
	if err := s.addProfile(ctx, &res, profile{Result: cpusage.Name, Metric: cpusage.MetricCgroupCPUCores, Unit: "cores", Op: ">=", Threshold: thr,
		What: "the control plane's cgroup CPU",
		Query: "sum(" + c.src.cgroupsQuery("container_cpu_usage_seconds_total", func(sel string) string {
			return fmt.Sprintf("rate(%s[%s])", sel, s.rate())
		}) + ")"}); err != nil {
		return res, err
	}
	res.Metrics = append(res.Metrics, throttled...)
	res.Metrics = append(res.Metrics, gaps...)
	res.Metrics = append(res.Metrics, pressure...)
	cpusage.FromSteps(&res)
	if res.Metric(cpusage.MetricCPUCoresBusiest, nil) == nil {
		return res, measure.Skipf("%s has neither kube-apiserver's process_cpu_seconds_total (job %s) nor cAdvisor's CPU time of the control plane's cgroups in %s", s.Client.URL(), jobValue(apiJob), s.Window)
	}
	job := "job " + jobValue(apiJob)
	if etcdOK {
		job += ", " + jobValue(etcdJob)
	}
	busiest := "process_cpu_seconds_total"
	if b := res.Metric(cpusage.MetricCPUCoresBusiest, nil); b != nil && b.Labels["source"] == cpusage.BasisCgroupCPU {
		busiest = "container_cpu_usage_seconds_total" + c.src.cgroupsText()
	}
	s.label(&res, job, map[string]string{cpusage.MetricCPUCores: "process_cpu_seconds_total", cpusage.MetricCPUCoresBusiest: busiest})
	if res.Reason != "" { // FromSteps's note of a figure bounded by the cores
		notes = append(notes, res.Reason)
	}
	res.Reason = strings.Join(notes, "; ")
	return res, nil
}

// cpuSample is one scrape's sample of a CPU counter: its timestamp (Prometheus's: the scrape's start), value,
// and how long the scrape took (scrape_duration_seconds of that scrape; 0 when not known).
type cpuSample struct{ t, v, dur float64 }

// addCPUProfile adds the profile of kube-apiserver's and etcd's summed CPU (cpu_cores{component=all}) from
// their process_cpu_seconds_total samples, each point the counter's increase between the last sample at or
// before it and the last sample a rate window before that, over the time between them plus the last one's
// scrape duration. Prometheus stamps a sample with its scrape's start, but a starved process's counter reads
// the CPU it used up to its (late) answer: rate() over the timestamps squeezed that CPU into the interval before
// it (a 2-core control plane read 2.4 cores). The time between two samples is never below the scrape interval.
func (c *ControlPlane) addCPUProfile(ctx context.Context, res *result.Result, jobs []struct{ comp, sel string }, thr float64) error {
	s := c.src
	var parts []string
	for _, j := range jobs {
		tag := func(expr, what string) string {
			return fmt.Sprintf(`label_replace(label_replace(%s, "what", %q, "", ""), "component", %q, "", "")`, expr, what, j.comp)
		}
		x, dur := selector("process_cpu_seconds_total", j.sel), selector("scrape_duration_seconds", j.sel)
		parts = append(parts, tag(x, "value"), tag("timestamp("+x+")", "ts"), tag(dur, "dur"), tag("timestamp("+dur+")", "durts"))
	}
	q := strings.Join(parts, " or ")
	r := s.Window.Range()
	r.Start = r.Start.Add(-s.Window.Rate) // the first point's rate window
	m, err := s.Client.Range(ctx, q, r)
	if err != nil {
		return err
	}
	res.Records = append(res.Records, result.Record{ID: "profile " + cpusage.MetricCPUCores, Labels: map[string]string{"query": q,
		"step": s.Window.Step.String(), "rate": s.Window.Rate.String(),
		"method": "counter increase between samples a rate window apart, over their timestamps' span plus the last scrape's duration"}})
	type key struct{ comp, instance string }
	vals := map[key]map[model.Time]map[string]float64{} // per series, per query step: value, ts, dur, durts
	for _, ss := range m {
		k := key{string(ss.Metric["component"]), string(ss.Metric["instance"])}
		if vals[k] == nil {
			vals[k] = map[model.Time]map[string]float64{}
		}
		for _, v := range ss.Values {
			if vals[k][v.Timestamp] == nil {
				vals[k][v.Timestamp] = map[string]float64{}
			}
			vals[k][v.Timestamp][string(ss.Metric["what"])] = float64(v.Value)
		}
	}
	series := map[key][]cpuSample{}
	for k, steps := range vals {
		byTS, durs := map[float64]float64{}, map[float64]float64{}
		for _, st := range steps {
			if ts, ok := st["ts"]; ok {
				if v, ok := st["value"]; ok {
					byTS[ts] = v
				}
			}
			if ts, ok := st["durts"]; ok {
				if d, ok := st["dur"]; ok {
					durs[ts] = d
				}
			}
		}
		var ss []cpuSample
		for ts, v := range byTS {
			ss = append(ss, cpuSample{t: ts, v: v, dur: durs[ts]})
		}
		slices.SortFunc(ss, func(a, b cpuSample) int { return cmpFloat(a.t, b.t) })
		series[k] = ss
	}
	rate := s.Window.Rate.Seconds()
	out := result.Series{Name: cpusage.MetricCPUCores, Unit: "cores", Labels: map[string]string{"component": cpusage.All}}
	for t := s.Window.From; !t.After(s.Window.To); t = t.Add(s.Window.Step) {
		at := float64(t.UnixMilli()) / 1e3
		sum, any := 0.0, false
		for _, ss := range series {
			if v, ok := boundedRate(ss, at, rate); ok {
				sum, any = sum+v, true
			}
		}
		if any {
			out.Points = append(out.Points, result.Point{T: t.UTC(), V: sum})
		}
	}
	if len(out.Points) == 0 {
		return nil
	}
	out.Marks = append(out.Marks, changeMarks(out.Points, "cores")...)
	for _, p := range out.Points {
		if p.V >= thr {
			o := Onset{Result: cpusage.Name, Metric: cpusage.MetricCPUCores, What: "kube-apiserver and etcd CPU", Labels: out.Labels, At: p.T,
				Value: p.V, Threshold: thr, Op: ">=", Unit: "cores"}
			out.Marks = append(out.Marks, result.Mark{T: p.T, Label: fmt.Sprintf("%s >= %s at %s", o.What, result.FormatQuantity(thr, "cores"), p.T.Format("15:04:05"))})
			s.mu.Lock()
			s.onsets = append(s.onsets, o)
			s.mu.Unlock()
			break
		}
	}
	res.Series = append(res.Series, out)
	return nil
}

// boundedRate is the CPU rate of one counter's samples (in time order) at at: its increase (counter resets
// count from zero) from the last sample at or before at-rate (or the first after it) to the last sample at or
// before at (one of its last two scrapes: a series that stopped answering is silent, as rate() over a
// window it answered in part would dilute it), over the time between them plus the last one's scrape duration (its counter was read at most that
// late), and never over less than the series' scrape interval; false with fewer than two samples there.
func boundedRate(ss []cpuSample, at, rate float64) (float64, bool) {
	last := -1
	for i, x := range ss {
		if x.t > at {
			break
		}
		last = i
	}
	iv := scrapeInterval(ss)
	if last < 1 || ss[last].t <= at-min(rate, 2*iv) {
		return 0, false // neither of its last two scrapes answered: the series is silent there
	}
	first := 0
	for i := last - 1; i >= 0; i-- {
		if ss[i].t <= at-rate {
			first = i
			break
		}
	}
	inc := 0.0
	for i := first + 1; i <= last; i++ {
		if d := ss[i].v - ss[i-1].v; d >= 0 {
			inc += d
		} else {
			inc += ss[i].v
		}
	}
	span := max(ss[last].t+ss[last].dur-ss[first].t, iv)
	if span <= 0 {
		return 0, false
	}
	return inc / span, true
}

// scrapeInterval is the median time between a series' samples.
func scrapeInterval(ss []cpuSample) float64 {
	if len(ss) < 2 {
		return 0
	}
	d := make([]float64, 0, len(ss)-1)
	for i := 1; i < len(ss); i++ {
		d = append(d, ss[i].t-ss[i-1].t)
	}
	slices.Sort(d)
	return d[len(d)/2]
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cores is how many cores kube-apiserver and etcd may use together, and its source: the stated figure, else
// the sum of their containers' CPU quotas when every one of them has one, else the CPUs of the hosts they run
// on when node_exporter runs on each of them; 0 when none says.
func (c *ControlPlane) cores(ctx context.Context, hosts map[string]bool) (float64, string, error) {
	s := c.src
	if s.ControlPlaneCores > 0 {
		return s.ControlPlaneCores, CoresStated, nil
	}
	w := s.window()
	overW := func(fn string) func(string) string {
		return func(sel string) string { return fmt.Sprintf("%s(%s[%s])", fn, sel, w) }
	}
	q := fmt.Sprintf(`label_replace((%s) / (%s), "what", "quota", "", "") or label_replace(%s, "what", "seen", "", "")`,
		c.src.cgroupsQuery("container_spec_cpu_quota", overW("max_over_time")), c.src.cgroupsQuery("container_spec_cpu_period", overW("max_over_time")),
		c.src.cgroupsQuery("container_cpu_usage_seconds_total", overW("count_over_time")))
	v, err := s.Client.Instant(ctx, q, s.Window.To)
	if err != nil {
		return 0, "", err
	}
	// A cgroup is a pod's container (its id changes when it restarts) or a raw cgroup (its id).
	key := func(m model.Metric) string {
		if m["container"] != "" {
			return string(m["pod"]) + "/" + string(m["container"])
		}
		return string(m["id"])
	}
	quota, seen := map[string]float64{}, map[string]bool{}
	for _, smp := range v {
		k := key(smp.Metric)
		if smp.Metric["what"] == "seen" {
			seen[k] = true
		} else if f := float64(smp.Value); f > 0 && !math.IsInf(f, 0) {
			quota[k] = max(quota[k], f)
		}
	}
	sum, all := 0.0, len(seen) > 0
	for k := range seen {
		all = all && quota[k] > 0
		sum += quota[k]
	}
	if all {
		return sum, CoresQuota, nil
	}
	if job, ok := s.Selector("node-exporter"); ok && len(hosts) > 0 {
		v, err := s.Client.Instant(ctx, fmt.Sprintf(`count by (instance) (last_over_time(%s[%s]))`, selector("node_cpu_seconds_total", job, `mode="idle"`), s.window()), s.Window.To)
		if err != nil {
			return 0, "", err
		}
		cpus := map[string]float64{}
		for _, smp := range v {
			cpus[host(string(smp.Metric["instance"]))] = float64(smp.Value)
		}
		sum := 0.0
		for h := range hosts {
			if cpus[h] == 0 {
				return 0, "", nil // a host without node_exporter: its cores are unknown
			}
			sum += cpus[h]
		}
		return sum, CoresNodeCPUs + " " + strings.Join(slices.Sorted(maps.Keys(hosts)), ", "), nil
	}
	return 0, "", nil
}

// throttling adds cAdvisor's CFS throttling of the control plane's containers (present only where they run
// under a CPU limit and cAdvisor is scraped); its absence is a note, not a missing input.
func (c *ControlPlane) throttling(ctx context.Context, notes *[]string) ([]result.Metric, error) {
	s := c.src
	inc := func(f string) string {
		return "sum(" + c.src.cgroupsQuery(f, func(sel string) string { return fmt.Sprintf("increase(%s[%s])", sel, s.window()) }) + ")"
	}
	q := fmt.Sprintf(`label_replace(%s / %s, "what", "ratio", "", "") or label_replace(%s, "what", "seconds", "", "")`,
		inc("container_cpu_cfs_throttled_periods_total"), inc("container_cpu_cfs_periods_total"), inc("container_cpu_cfs_throttled_seconds_total"))
	v, err := s.Client.Instant(ctx, q, s.Window.To)
	if err != nil {
		return nil, err
	}
	var out []result.Metric
	for _, smp := range v {
		f := float64(smp.Value)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		lab := map[string]string{"prometheus": fmt.Sprintf("container_cpu_cfs_throttled_periods_total%s %s", c.src.cgroupsText(), s.Window)}
		if smp.Metric["what"] == "ratio" {
			out = append(out, result.Metric{Name: cpusage.MetricCgroupThrottledRatio, Unit: "ratio", Value: f, Labels: lab})
		} else {
			out = append(out, result.Metric{Name: cpusage.MetricCgroupThrottledSeconds, Unit: "seconds", Value: f, Labels: lab})
		}
	}
	if len(out) == 0 {
		*notes = append(*notes, fmt.Sprintf("no CFS throttling series of the control plane (cAdvisor's container_cpu_cfs_periods_total%s): not scraped, or no CPU limit", c.src.cgroupsText()))
		return out, nil
	}
	share, err := c.throttledShare(ctx)
	return append(out, share...), err
}

// hosts are the hosts of the instances Prometheus scraped the control plane's jobs at in the window (their up
// series: answered or not).
func (c *ControlPlane) hosts(ctx context.Context, jobs []struct{ comp, sel string }) (map[string]bool, error) {
	s := c.src
	var parts []string
	for _, j := range jobs {
		parts = append(parts, fmt.Sprintf("count by (instance) (count_over_time(%s[%s]))", selector("up", j.sel), s.window()))
	}
	v, err := s.Client.Instant(ctx, strings.Join(parts, " or "), s.Window.To)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, smp := range v {
		out[host(string(smp.Metric["instance"]))] = true
	}
	return out, nil
}

// throttledShare is the share of the window's CFS periods in which a control-plane cgroup's quota ran out, for
// the most throttled of them: its throttled periods × its CFS period ÷ the window (cpusage's
// MetricCgroupThrottledWindowShare).
func (c *ControlPlane) throttledShare(ctx context.Context) ([]result.Metric, error) {
	s := c.src
	w := s.window()
	thr := c.src.cgroupsQuery("container_cpu_cfs_throttled_periods_total", func(sel string) string { return fmt.Sprintf("increase(%s[%s])", sel, w) })
	period := c.src.cgroupsQuery("container_spec_cpu_period", func(sel string) string { return fmt.Sprintf("max_over_time(%s[%s])", sel, w) })
	q := fmt.Sprintf("clamp_max(max((%s) * (%s)) / 1e6 / %g, 1)", thr, period, s.Window.Duration().Seconds())
	v, err := s.Client.Instant(ctx, q, s.Window.To)
	if err != nil {
		return nil, err
	}
	var out []result.Metric
	for _, smp := range v {
		if f := float64(smp.Value); !math.IsNaN(f) && !math.IsInf(f, 0) {
			out = append(out, result.Metric{Name: cpusage.MetricCgroupThrottledWindowShare, Unit: "ratio", Value: f,
				Labels: map[string]string{"prometheus": fmt.Sprintf("container_cpu_cfs_throttled_periods_total × container_spec_cpu_period%s %s", c.src.cgroupsText(), s.Window)}})
		}
	}
	return out, nil
}

// scrapeGaps counts the scrapes Prometheus attempted of each component's own /metrics in the window and those
// that failed (up == 0): a starved apiserver answers late or not at all, and its own CPU counter then under-reads.
func (c *ControlPlane) scrapeGaps(ctx context.Context, jobs []struct{ comp, sel string }) ([]result.Metric, error) {
	s := c.src
	var parts []string
	for _, j := range jobs {
		parts = append(parts, fmt.Sprintf(`label_replace(%s, "component", %q, "", "")`, s.scrapeCounts(j.sel), j.comp))
	}
	v, err := s.Client.Instant(ctx, strings.Join(parts, " or "), s.Window.To)
	if err != nil {
		return nil, err
	}
	attempted, answered := map[string]float64{}, map[string]float64{}
	for _, smp := range v {
		comp := string(smp.Metric["component"])
		if smp.Metric["what"] == "attempted" {
			attempted[comp] = float64(smp.Value)
		} else {
			answered[comp] = float64(smp.Value)
		}
	}
	var out []result.Metric
	for _, j := range jobs {
		a, ok := attempted[j.comp]
		if !ok {
			continue
		}
		comp := map[string]string{"component": j.comp}
		out = append(out, result.Metric{Name: cpusage.MetricScrapesAttempted, Unit: "count", Value: a, Labels: comp},
			result.Metric{Name: cpusage.MetricScrapesMissed, Unit: "count", Value: a - answered[j.comp], Labels: comp})
	}
	return out, nil
}

// pressure is PSI's CPU "some" on the control-plane hosts over the window (node_exporter's
// node_pressure_cpu_waiting_seconds_total), where node_exporter runs there: the share of time some task waited
// for a CPU, which a component starved by its neighbours rather than its own limit shows.
func (c *ControlPlane) pressure(ctx context.Context, hosts map[string]bool) ([]result.Metric, error) {
	s := c.src
	job, ok := s.Selector("node-exporter")
	if !ok || len(hosts) == 0 {
		return nil, nil
	}
	v, err := s.Client.Instant(ctx, fmt.Sprintf("rate(%s[%s])", selector("node_pressure_cpu_waiting_seconds_total", job), s.window()), s.Window.To)
	if err != nil {
		return nil, err
	}
	var out []result.Metric
	for _, smp := range v {
		h := host(string(smp.Metric["instance"]))
		if f := float64(smp.Value); hosts[h] && !math.IsNaN(f) {
			out = append(out, result.Metric{Name: cpusage.MetricCPUPressure, Unit: "ratio", Value: f, Labels: map[string]string{"instance": h}})
		}
	}
	return out, nil
}

// host is the host part of an instance label ("198.19.255.1:6443" -> "198.19.255.1").
func host(instance string) string {
	if h, _, err := net.SplitHostPort(instance); err == nil {
		return h
	}
	return instance
}

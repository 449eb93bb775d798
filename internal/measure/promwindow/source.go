// Package promwindow is kubeslow's read-only measurements taken from a Prometheus-compatible server over a past
// window instead of from live scrapes: "it was slow yesterday at 3 pm". The API and etcd measurements build
// the same window deltas the live ones take from two scrapes (increase() over the window, summed by the same
// labels) and run the live measurements' own analysis on them, so their results carry the same names and
// metric names and the same rules fire on the same thresholds. Each also gets time profiles over the window
// (result.Series) with the instant each signal crossed its rule's threshold. What the server does not have is
// said: a job that is not found makes its measurement skipped with the series it looked for, and a metric
// Prometheus cannot provide is listed as absent in its result, so its rule is "not evaluated", never "clear".
package promwindow

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/promql"
)

// Role is one kind of scrape target kubeslow reads, found by a series only it exposes.
type Role struct {
	Name string
	// Signature is a series only this kind of target exposes; the jobs that have it are the role's jobs.
	Signature string
	What      string
}

// Roles are the targets kubeslow looks for, in report order. Each signature is a series the component exposes
// from its start (a counter that appears only after its first event would hide an idle component).
var Roles = []Role{
	{"apiserver", "apiserver_request_total", "kube-apiserver"},
	{"etcd", "etcd_server_has_leader", "etcd"},
	{"scheduler", "scheduler_pending_pods", "kube-scheduler"},
	{"controller-manager", `workqueue_adds_total{name="replicaset"}`, "kube-controller-manager"},
	{"kubelet", "kubelet_node_name", "kubelet"},
	{"cadvisor", "container_cpu_usage_seconds_total", "cAdvisor (kubelet /metrics/cadvisor)"},
	{"node-exporter", "node_uname_info", "node_exporter"},
	{"coredns", "coredns_build_info", "CoreDNS"},
}

// Target is what discovery found for a role.
type Target struct {
	Role Role
	// Job is the job label the queries select ("" when the role is absent); Others are further jobs that
	// expose the signature (a second scrape of the same targets, which would double every sum).
	Job    string
	Others []string
	// Series counts the signature's series of Job (its instances).
	Series int
	// Override is the job --prometheus-job set ("" when discovered).
	Override string
	// Silent says Prometheus scraped the job in the window (its up series is there) but it answered fewer than
	// two of those scrapes (a starved or hung component): too few for a rate of any of its counters over the
	// window. Answered and Attempted are the counts.
	Silent              bool
	Answered, Attempted int
}

// Silence says a silent target's scrapes as the reports put it: "answered none of Prometheus's 13 scrapes",
// "answered 1 of Prometheus's 13 scrapes".
func (t *Target) Silence() string {
	if t.Answered == 0 {
		return fmt.Sprintf("answered none of Prometheus's %d scrapes", t.Attempted)
	}
	return fmt.Sprintf("answered %d of Prometheus's %d scrapes", t.Answered, t.Attempted)
}

// silentLookback is how far around the window (before it and after it) discovery looks for the signature of a
// role whose job answered no scrape in the window.
const silentLookback = time.Hour

// Source is the server and window every measurement of a run reads, and what they found.
type Source struct {
	Client *promql.Client
	Window promql.Window
	// Jobs overrides discovery: role name -> job label value.
	Jobs map[string]string
	// Rules are the findings engine's rules (check.Rules()), handed in by whoever builds the source: a profile
	// that names a rule takes its threshold from there, and the past-window path imports no engine.
	Rules []rule.Rule
	// ControlPlaneCores are the cores kube-apiserver and etcd may use together, when stated
	// (--prometheus-control-plane-cores; 0: from cAdvisor's quota or node_exporter's CPU count).
	ControlPlaneCores float64
	// ControlPlaneCgroups are cAdvisor's label matchers of the control plane's cgroups
	// (--prometheus-control-plane-cgroup; none: DefaultControlPlaneCgroups).
	ControlPlaneCgroups []string

	once    sync.Once
	targets map[string]*Target
	discErr error
	mu      sync.Mutex
	onsets  []Onset
}

// NewSource returns a source whose profiles take their thresholds from rules; discovery runs on first use.
func NewSource(c *promql.Client, w promql.Window, jobs map[string]string, rules []rule.Rule) *Source {
	return &Source{Client: c, Window: w, Jobs: jobs, Rules: rules}
}

// ParseJobs reads --prometheus-job values "role=job".
func ParseJobs(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		role, job, ok := strings.Cut(v, "=")
		known := false
		for _, r := range Roles {
			known = known || r.Name == role
		}
		if !ok || !known || job == "" || strings.ContainsAny(job, "\"\\\n") {
			names := make([]string, len(Roles))
			for i, r := range Roles {
				names[i] = r.Name
			}
			return nil, fmt.Errorf("--prometheus-job %q: want ROLE=JOB with ROLE one of %s", v, strings.Join(names, ", "))
		}
		out[role] = job
	}
	return out, nil
}

// Discover finds each role's job: the jobs exposing the role's signature series within the window, the one with
// the most series at the window's end first. It runs once per source.
func (s *Source) Discover(ctx context.Context) error {
	s.once.Do(func() {
		s.targets = map[string]*Target{}
		for _, r := range Roles {
			t := &Target{Role: r}
			s.targets[r.Name] = t
			if job, ok := s.Jobs[r.Name]; ok {
				t.Job, t.Override = job, job
			}
			sel := r.Signature
			if t.Override != "" {
				sel = withMatcher(sel, fmt.Sprintf("job=%q", t.Job))
			}
			// The jobs exposing the signature in the window come from the index (no samples loaded); the series
			// each has at the window's end rank them.
			jobs, err := s.Client.LabelValues(ctx, "job", sel, s.Window.From, s.Window.To)
			if err != nil {
				s.discErr = err
				return
			}
			count := map[string]int{}
			if len(jobs) > 0 {
				v, err := s.Client.Instant(ctx, fmt.Sprintf("count by (job) (%s)", sel), s.Window.To)
				if err != nil {
					s.discErr = err
					return
				}
				for _, smp := range v {
					count[string(smp.Metric["job"])] = int(smp.Value)
				}
			}
			sort.Slice(jobs, func(i, j int) bool {
				if count[jobs[i]] != count[jobs[j]] {
					return count[jobs[i]] > count[jobs[j]]
				}
				return jobs[i] < jobs[j]
			})
			for i, job := range jobs {
				if i == 0 {
					t.Series = count[job]
					if t.Override == "" {
						t.Job = job
					}
					continue
				}
				t.Others = append(t.Others, job)
			}
			if t.Override != "" && len(jobs) == 0 {
				t.Job = "" // the job given does not expose the role's series in the window
			}
			if err := s.discoverSilent(ctx, t, sel); err != nil {
				s.discErr = err
				return
			}
		}
	})
	return s.discErr
}

// silentRoles are the roles whose silence discovery checks: the control plane's processes, which a starved
// host leaves unable to answer their scrapes.
var silentRoles = map[string]bool{"apiserver": true, "etcd": true}

// discoverSilent marks a control-plane role whose job Prometheus scraped in the window with fewer than two
// answers (its up series is there, 0 but for at most one scrape): the job found, else one that exposed the signature in the hour before or after
// the window, else — a component that never answered shows no series to know it by — a job scraped in the
// window whose name holds the role's (kube-prometheus's "apiserver", Prometheus's example
// "kubernetes-apiservers", the lab's "lab-apiserver"). The window's silence is then the component's, not the
// server's lack of a job.
func (s *Source) discoverSilent(ctx context.Context, t *Target, sel string) error {
	if !silentRoles[t.Role.Name] {
		return nil
	}
	candidates := []string{t.Job}
	if t.Job == "" {
		// Before or after: a component starved from the moment Prometheus first scraped it has answered only
		// once its starvation ended.
		before, err := s.Client.LabelValues(ctx, "job", sel, s.Window.From.Add(-silentLookback), s.Window.To.Add(silentLookback))
		if err != nil {
			return err
		}
		candidates = before
		if len(candidates) == 0 {
			scraped, err := s.Client.LabelValues(ctx, "job", "up", s.Window.From, s.Window.To)
			if err != nil {
				return err
			}
			for _, job := range scraped {
				if strings.Contains(job, t.Role.Name) {
					candidates = append(candidates, job)
				}
			}
		}
	}
	for _, job := range candidates {
		if job == "" || (t.Override != "" && job != t.Override) {
			continue
		}
		// Attempts and answers in the window: silent when it was scraped, missed some and answered fewer
		// than two (one answer gives no rate: measured in CI, a 0.1-core apiserver answered 1 of its scrapes
		// in a 65 s window).
		v, err := s.Client.Instant(ctx, s.scrapeCounts(fmt.Sprintf("job=%q", job)), s.Window.To)
		if err != nil {
			return err
		}
		attempted, answered := 0.0, 0.0
		for _, smp := range v {
			if smp.Metric["what"] == "attempted" {
				attempted = float64(smp.Value)
			} else {
				answered = float64(smp.Value)
			}
		}
		if attempted > answered && answered < 2 {
			t.Job, t.Silent, t.Answered, t.Attempted = job, true, int(answered), int(attempted)
			return nil
		}
	}
	return nil
}

// scrapeCounts is the query of the scrapes Prometheus attempted of the job jobSel selects in the window and of
// those answered (up is 1 for a scrape answered, 0 for one that failed), marked "what"="attempted" and
// "answered".
func (s *Source) scrapeCounts(jobSel string) string {
	up := selector("up", jobSel)
	return fmt.Sprintf(`label_replace(sum(count_over_time(%s[%s])), "what", "attempted", "", "") or label_replace(sum(sum_over_time(%s[%s])), "what", "answered", "", "")`,
		up, s.window(), up, s.window())
}

// Target returns the role's discovery (after Discover).
func (s *Source) Target(role string) *Target { return s.targets[role] }

// Selector is the label matcher selecting the role's job, and whether the role was found.
func (s *Source) Selector(role string) (string, bool) {
	t := s.targets[role]
	if t == nil || t.Job == "" {
		return "", false
	}
	return fmt.Sprintf("job=%q", t.Job), true
}

// absentReason says why a role's measurement has nothing to read.
func (s *Source) absentReason(role string) string {
	t := s.targets[role]
	if t != nil && t.Override != "" {
		return fmt.Sprintf("series %s is absent from %s in %s for job %q (set by --prometheus-job)", t.Role.Signature, s.Client.URL(), s.Window, t.Override)
	}
	sig := role
	if t != nil {
		sig = t.Role.Signature
	}
	return fmt.Sprintf("series %s is absent from %s in %s: no %s job is scraped there", sig, s.Client.URL(), s.Window, role)
}

// withMatcher adds a label matcher to a selector ("name" or "name{...}").
func withMatcher(sel, matcher string) string {
	if matcher == "" {
		return sel
	}
	if strings.HasSuffix(sel, "}") {
		inner := strings.TrimSuffix(sel, "}")
		if strings.HasSuffix(inner, "{") {
			return inner + matcher + "}"
		}
		return inner + "," + matcher + "}"
	}
	return sel + "{" + matcher + "}"
}

// labelsOf returns a sample's labels as a map, without the metric name.
func labelsOf(m model.Metric) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if k != model.MetricNameLabel {
			out[string(k)] = string(v)
		}
	}
	return out
}

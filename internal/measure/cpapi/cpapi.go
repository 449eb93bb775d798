// Package cpapi is the API tier's reading of the control plane beyond /metrics, with only the grants `kubeslow
// rbac` prints, so it works on managed control planes: the apiserver's own health checks (/readyz?verbose),
// how stale the kube-scheduler's and kube-controller-manager's leader Leases are (a component that is down or
// starved stops renewing), a per-flow snapshot of API Priority and Fairness's queues where the debug endpoint is
// allowed, and EKS's scheduler (ksh) and controller-manager (kcm) metrics where they are served.
package cpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "controlplane.api"

// Metric names of the result.
const (
	// MetricReadyzFailed is 1 for each /readyz check that failed (label check), 0 for the others.
	MetricReadyzFailed = "readyz_check_failed"
	// MetricLeaseStaleness is how long ago a component's leader Lease was last renewed (label component),
	// against MetricLeaseDuration, the lease's own duration: older than that, no leader holds it.
	MetricLeaseStaleness = "lease_staleness_seconds"
	MetricLeaseDuration  = "lease_duration_seconds"
	// MetricAPFQueued is the requests waiting in APF queues at the snapshot, by priority level, flow schema and
	// flow distinguisher (the client's user or namespace), from /debug/api_priority_and_fairness/dump_requests.
	MetricAPFQueued = "apf_queued_requests"
	// MetricEKSPendingPods is the scheduler's pending pods by queue from EKS's ksh metrics (label queue).
	MetricEKSPendingPods = "eks_scheduler_pending_pods"
	// MetricEKSWorkqueueDepth is the kube-controller-manager's deepest work queues from EKS's kcm metrics
	// (label name).
	MetricEKSWorkqueueDepth = "eks_kcm_workqueue_depth"
)

// Components whose leader Lease is read (kube-system, the name is the component's).
var Components = []string{"kube-scheduler", "kube-controller-manager"}

// EKS's control-plane metrics, served through the API on EKS 1.28+ (docs.aws.amazon.com/eks/latest/userguide/view-raw-metrics.html).
const (
	EKSSchedulerPath  = "/apis/metrics.eks.amazonaws.com/v1/ksh/container/metrics"
	EKSControllerPath = "/apis/metrics.eks.amazonaws.com/v1/kcm/container/metrics"
	APFDumpPath       = "/debug/api_priority_and_fairness/dump_requests"
)

// Measurement reads the control plane through the API once.
type Measurement struct{}

// New returns the measurement.
func New() *Measurement { return &Measurement{} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (*Measurement) Description() string {
	return "the control plane through the API: /readyz checks, kube-scheduler and kube-controller-manager Lease staleness, APF queues per flow, EKS ksh/kcm metrics"
}

// Run implements measure.Measurement.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	res := result.Result{Name: Name, Status: result.StatusPass}
	var notes []string
	rc := env.Client.CoreV1().RESTClient()
	raw, err := rc.Get().AbsPath("/readyz").Param("verbose", "").DoRaw(ctx)
	// A failing check answers 500 with the same body.
	if err != nil && len(raw) == 0 {
		if apierrors.IsForbidden(err) {
			return res, measure.Skipf("no permission to GET /readyz: %v", err)
		}
		return res, fmt.Errorf("GET /readyz?verbose: %w", err)
	}
	checks := ParseReadyz(raw)
	var failed []string
	for _, c := range checks {
		v := 0.0
		if !c.OK {
			v = 1
			failed = append(failed, c.Name)
		}
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricReadyzFailed, Unit: "bool", Value: v, Labels: map[string]string{"check": c.Name}})
	}
	if len(failed) > 0 {
		res.Status = result.StatusFail
		notes = append(notes, "readyz checks failing: "+strings.Join(failed, ", "))
	}

	now := env.Clock.Now()
	for _, comp := range Components {
		l, err := env.Client.CoordinationV1().Leases("kube-system").Get(ctx, comp, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			notes = append(notes, fmt.Sprintf("no %s Lease in kube-system (leader election off, or the provider hides it)", comp))
			continue
		case err != nil:
			return res, fmt.Errorf("get Lease kube-system/%s: %w", comp, err)
		}
		renew := l.Spec.RenewTime
		if renew == nil {
			renew = l.Spec.AcquireTime
		}
		if renew == nil {
			notes = append(notes, fmt.Sprintf("the %s Lease was never renewed", comp))
			continue
		}
		lbl := map[string]string{"component": comp}
		stale := now.Sub(renew.Time).Seconds()
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricLeaseStaleness, Unit: "seconds", Value: max(0, stale), Labels: lbl})
		if d := l.Spec.LeaseDurationSeconds; d != nil {
			res.Metrics = append(res.Metrics, result.Metric{Name: MetricLeaseDuration, Unit: "seconds", Value: float64(*d), Labels: lbl})
			if stale > float64(*d) {
				notes = append(notes, fmt.Sprintf("%s's Lease was last renewed %.0f s ago, past its %d s duration: no leader holds it", comp, stale, *d))
			}
		}
	}

	// Optional sources: a 403 or 404 is the cluster's answer, not a fault.
	if raw, err := rc.Get().AbsPath(APFDumpPath).DoRaw(ctx); err == nil {
		for _, q := range ParseAPFDump(raw) {
			res.Metrics = append(res.Metrics, result.Metric{Name: MetricAPFQueued, Unit: "count", Value: float64(q.Count),
				Labels: map[string]string{"priority_level": q.PriorityLevel, "flow_schema": q.FlowSchema, "flow": q.Flow}})
		}
	} else if apierrors.IsForbidden(err) {
		notes = append(notes, "APF's per-flow queue snapshot not read: no permission on "+APFDumpPath)
	}
	eks := false
	for _, src := range []struct{ path, fam, metric, label string }{
		{EKSSchedulerPath, "scheduler_pending_pods", MetricEKSPendingPods, "queue"},
		{EKSControllerPath, "workqueue_depth", MetricEKSWorkqueueDepth, "name"},
	} {
		raw, err := rc.Get().AbsPath(src.path).DoRaw(ctx)
		if err != nil {
			continue // 404: not EKS (or an older one); said nowhere
		}
		snap, err := prom.Parse(bytes.NewReader(raw), now)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: %v", src.path, err))
			continue
		}
		eks = true
		ss := snap.Series(src.fam)
		sort.Slice(ss, func(i, j int) bool { return ss[i].Value > ss[j].Value })
		for _, s := range ss[:min(len(ss), 10)] {
			res.Metrics = append(res.Metrics, result.Metric{Name: src.metric, Unit: "count", Value: s.Value, Labels: map[string]string{src.label: s.Labels[src.label]}})
		}
	}
	if eks {
		notes = append(notes, "EKS control-plane metrics read (ksh/kcm)")
	}
	res.Reason = strings.Join(notes, "; ")
	return res, nil
}

// Check is one line of /readyz?verbose.
type Check struct {
	Name string
	OK   bool
}

// ParseReadyz reads /readyz?verbose's "[+]name ok" and "[-]name failed: reason withheld" lines (others are
// ignored).
func ParseReadyz(b []byte) []Check {
	var out []Check
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if len(l) < 4 || l[0] != '[' || l[2] != ']' || (l[1] != '+' && l[1] != '-') {
			continue
		}
		name, _, _ := strings.Cut(l[3:], " ")
		if name == "" {
			continue
		}
		out = append(out, Check{Name: name, OK: l[1] == '+'})
	}
	return out
}

// Queued is the requests of one flow waiting in APF queues.
type Queued struct {
	PriorityLevel, FlowSchema, Flow string
	Count                           int
}

// ParseAPFDump reads /debug/api_priority_and_fairness/dump_requests: a header line, then one comma-separated
// line per queued request starting with its priority level, flow schema, queue index, index in the queue and
// flow distinguisher. Lines that are not that shape are ignored; flows are returned with the most queued first.
func ParseAPFDump(b []byte) []Queued {
	by := map[[3]string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if first {
			first = false
			if len(f) > 0 && strings.Contains(strings.ToLower(f[0]), "prioritylevel") {
				continue
			}
		}
		if len(f) < 5 {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if f[0] == "" || f[1] == "" {
			continue
		}
		by[[3]string{f[0], f[1], f[4]}]++
	}
	out := make([]Queued, 0, len(by))
	for k, n := range by {
		out = append(out, Queued{PriorityLevel: k[0], FlowSchema: k[1], Flow: k[2], Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return fmt.Sprint(out[i]) < fmt.Sprint(out[j])
	})
	return out
}

package promwindow

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Throttling is system.throttling from Prometheus: cAdvisor's CFS counters of kube-system's containers over
// the window (increase() of periods, throttled periods and seconds, CPU usage; the largest quota / period),
// built by throttle.Build as the live measurement builds its two scrapes, so KS-SYSTEM-THROTTLED reads it on
// its threshold. Without cAdvisor the rule is not evaluated.
type Throttling struct{ src *Source }

// NewThrottling returns the measurement.
func NewThrottling(s *Source) *Throttling { return &Throttling{src: s} }

// Name implements measure.Measurement: the live measurement's name, so the same rule reads it.
func (*Throttling) Name() string { return throttle.Name }

// Description implements measure.Measurement.
func (t *Throttling) Description() string {
	return fmt.Sprintf("CFS throttling of kube-system's containers under their CPU limits (cAdvisor), from Prometheus over %s", t.src.Window)
}

// throttleBy groups a container's series: its node (the node label where the setup adds one, else the name
// the kubelet at the scraped instance gives, else the instance's host), pod and container; a restarted
// container's cgroups (new ids) are summed.
const throttleBy = "instance, node, pod, container"

// Run implements measure.Measurement.
func (t *Throttling) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	s := t.src
	if err := s.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	job, ok := s.Selector("cadvisor")
	if !ok {
		return result.Result{}, measure.Skipf("%s", s.absentReason("cadvisor"))
	}
	sel := func(f string) string {
		return selector(f, job, fmt.Sprintf(`namespace=%q`, throttle.Namespace), `container!="POD"`)
	}
	w := s.window()
	part := func(what, expr string) string {
		return fmt.Sprintf(`label_replace(%s, "what", %q, "", "")`, expr, what)
	}
	inc := func(f string) string { return fmt.Sprintf("sum by (%s) (increase(%s[%s]))", throttleBy, sel(f), w) }
	q := strings.Join([]string{
		part("periods", inc(throttle.FamPeriods)),
		part("throttled", inc(throttle.FamThrottled)),
		part("throttled_seconds", inc(throttle.FamThrottledSeconds)),
		part("cpu", inc(throttle.FamUsage)),
		part("limit", fmt.Sprintf("max by (%[1]s) (max_over_time(%[2]s[%[4]s])) / max by (%[1]s) (max_over_time(%[3]s[%[4]s]))",
			throttleBy, sel(throttle.FamQuota), sel(throttle.FamPeriod), w)),
	}, " or ")
	v, err := s.Client.Instant(ctx, q, s.Window.To)
	if err != nil {
		return result.Result{}, err
	}
	names, err := t.nodeNames(ctx)
	if err != nil {
		return result.Result{}, err
	}
	byKey := map[string]*throttle.Container{}
	var order []string
	for _, smp := range v {
		f := float64(smp.Value)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		node := string(smp.Metric["node"])
		if node == "" {
			node = names[string(smp.Metric["instance"])]
		}
		if node == "" {
			node = host(string(smp.Metric["instance"]))
		}
		c := throttle.Container{Node: node, Pod: string(smp.Metric["pod"]), Container: string(smp.Metric["container"])}
		p := byKey[c.Key()]
		if p == nil {
			p = &c
			byKey[c.Key()] = p
			order = append(order, c.Key())
		}
		switch smp.Metric["what"] {
		case "periods":
			p.Periods += f
		case "throttled":
			p.Throttled += f
		case "throttled_seconds":
			p.ThrottledSeconds += f
		case "cpu":
			p.CPUSeconds += f
		case "limit":
			p.Limit = max(p.Limit, f)
		}
	}
	cs := make([]throttle.Container, 0, len(order))
	for _, k := range order {
		cs = append(cs, *byKey[k])
	}
	res := throttle.Build(throttle.PreferContainers(cs), s.Window.Duration(), s.Window.From, s.Window.To)
	s.label(&res, "job "+jobValue(job))
	return res, nil
}

// nodeNames maps each kubelet's scraped instance to its node's name (kubelet_node_name{node}, one query),
// where the kubelets are scraped: cAdvisor is served by the kubelet, so both jobs scrape the same instance.
func (t *Throttling) nodeNames(ctx context.Context) (map[string]string, error) {
	s := t.src
	job, ok := s.Selector("kubelet")
	if !ok {
		return nil, nil
	}
	v, err := s.Client.Instant(ctx, fmt.Sprintf("max by (instance, node) (last_over_time(%s[%s]))", selector("kubelet_node_name", job), s.window()), s.Window.To)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, smp := range v {
		if n := string(smp.Metric["node"]); n != "" {
			out[string(smp.Metric["instance"])] = n
		}
	}
	return out, nil
}

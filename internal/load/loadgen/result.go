package loadgen

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// Quantiles reported for every latency histogram.
var Quantiles = []struct {
	Name string
	Q    float64
}{{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}}

// Metrics turns a run into report metrics, labelled with labels (e.g. the path).
func (r *Result) Metrics(labels map[string]string) []result.Metric {
	l := func(extra ...string) map[string]string {
		m := map[string]string{}
		for k, v := range labels {
			m[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	out := []result.Metric{
		{Name: "requests_per_second", Unit: "requests_per_second", Value: r.RequestsPerSecond(), Labels: l()},
		{Name: "requests", Unit: "count", Value: float64(r.Requests), Labels: l()},
		{Name: "errors", Unit: "count", Value: float64(r.Errors), Labels: l()},
		{Name: "connections", Unit: "count", Value: float64(r.Connections), Labels: l()},
	}
	if r.Threads > 0 {
		out = append(out, result.Metric{Name: "threads", Unit: "count", Value: float64(r.Threads), Labels: l()})
	}
	if r.Latency.TotalCount() > 0 {
		for _, q := range Quantiles {
			out = append(out, result.Metric{Name: "latency_" + q.Name, Unit: "seconds", Value: float64(r.Latency.ValueAtQuantile(q.Q)) / 1e6, Labels: l()})
		}
		out = append(out, result.Metric{Name: "latency_max", Unit: "seconds", Value: float64(r.Latency.Max()) / 1e6, Labels: l()})
	}
	if r.Mode == Open {
		out = append(out, result.Metric{Name: "planned", Unit: "count", Value: float64(r.Planned), Labels: l()},
			result.Metric{Name: "unsent", Unit: "count", Value: float64(r.Unsent), Labels: l()})
		if r.SchedLate.TotalCount() > 0 {
			out = append(out, result.Metric{Name: "schedule_late_p99", Unit: "seconds", Value: float64(r.SchedLate.ValueAtQuantile(99)) / 1e6, Labels: l()},
				result.Metric{Name: "schedule_late_max", Unit: "seconds", Value: float64(r.SchedLate.Max()) / 1e6, Labels: l()})
		}
		if r.SendLate.TotalCount() > 0 {
			out = append(out, result.Metric{Name: "send_late_p99", Unit: "seconds", Value: float64(r.SendLate.ValueAtQuantile(99)) / 1e6, Labels: l()})
		}
	}
	codes := make([]int, 0, len(r.Codes))
	for c := range r.Codes {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		out = append(out, result.Metric{Name: "responses", Unit: "count", Value: float64(r.Codes[c]), Labels: l("code", strconv.Itoa(c))})
	}
	kinds := make([]string, 0, len(r.ErrorKinds))
	for k := range r.ErrorKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		out = append(out, result.Metric{Name: "errors_by_kind", Unit: "count", Value: float64(r.ErrorKinds[k]), Labels: l("kind", k)})
	}
	return out
}

// Describe is a one-line summary of the run's shape.
func (c *Config) Describe() string {
	conn := "keep-alive"
	if c.NewConn {
		conn = "new connection per request"
	}
	engine := c.engine() + " engine"
	if c.Threads > 0 {
		engine += fmt.Sprintf(" (%d threads)", c.Threads)
	}
	if c.Mode == Open {
		return fmt.Sprintf("open loop at %v requests/s over %d connections (%s), %d-byte %s, %s, %s", c.Rate, c.Concurrency, conn, c.BodyBytes, c.Method, c.Duration, engine)
	}
	return fmt.Sprintf("closed loop at concurrency %d (%s), %d-byte %s, %s, %s", c.Concurrency, conn, c.BodyBytes, c.Method, c.Duration, engine)
}

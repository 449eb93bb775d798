// Package dnslookup times DNS lookups as an application in a pod makes them (issue 29: DNS 5 s): one kubeslow
// agent pod per real node (at most MaxClients) looks names up with its resolver, which sends A and AAAA and
// retries after resolv.conf's time-out (5 s by default), so a dropped query shows as a lookup near a multiple
// of that time-out while the DNS server's own latency stays normal — the conntrack race on UDP DNAT
// (kubernetes#56903) or a lossy path. The shape of the lookup latency is the result.
package dnslookup

import (
	"math"
	"sort"
	"strings"

	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "dns.lookups"

// Metric names of the result (labels client_node; the shares also timeout: the resolver's, e.g. "5s").
const (
	MetricLookups = "lookups"
	// MetricNearTimeoutShare is the share of lookups within NearWindow of a multiple of the resolver's time-out
	// (5 s, 10 s, 15 s with the defaults); MetricNearTimeout counts them.
	MetricNearTimeoutShare = "lookup_near_timeout_share"
	MetricNearTimeout      = "lookup_near_timeout"
	// MetricNearMultipleShare is the share near one multiple (label multiple: "1", "2", "3").
	MetricNearMultipleShare = "lookup_near_multiple_share"
	MetricLookupErrors      = "lookup_errors"
)

// NearWindow is how close to a multiple of the time-out a lookup must be to count: ±0.5 s (a healthy lookup
// takes milliseconds; a retried one the time-out plus the answer's round trip).
const NearWindow = 0.5

// Client is one client pod's lookups.
type Client struct {
	Node    string
	Lookups agent.DNSLookups
}

// Analyze is the shape of each client's lookup latency (pure).
func Analyze(clients []Client) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	add := func(name, unit string, v float64, l map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	total := 0
	sort.Slice(clients, func(i, j int) bool { return clients[i].Node < clients[j].Node })
	for _, c := range clients {
		s := c.Lookups.Samples
		node := map[string]string{"client_node": c.Node}
		add(MetricLookups, "count", float64(len(s)), node)
		add("lookups_skipped", "count", float64(c.Lookups.Skipped), node)
		if len(s) == 0 {
			continue
		}
		total += len(s)
		conf := c.Lookups.Conf
		t := conf.Timeout
		if t <= 0 {
			t = 5
		}
		var secs []float64
		errs := 0
		near := map[int]int{}
		for _, x := range s {
			secs = append(secs, x.Seconds)
			if x.Error != "" {
				errs++
			}
			if k := math.Round(x.Seconds / t); k >= 1 && math.Abs(x.Seconds-k*t) <= NearWindow {
				near[int(k)]++
			}
		}
		sorted := stats.Sorted(secs)
		for _, q := range []struct {
			n string
			q float64
		}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"max", 1}} {
			add("lookup_seconds_"+q.n, "seconds", stats.Percentile(sorted, q.q), node)
		}
		add(MetricLookupErrors, "count", float64(errs), node)
		all := 0
		for k := 1; k <= 3; k++ {
			all += near[k]
			add(MetricNearMultipleShare, "ratio", float64(near[k])/float64(len(s)),
				map[string]string{"client_node": c.Node, "multiple": string(rune('0' + k))})
		}
		for k, n := range near {
			if k > 3 {
				all += n
			}
		}
		l := map[string]string{"client_node": c.Node, "timeout": result.FormatQuantity(t, "seconds"), "resolver": c.Lookups.Resolver,
			"options": strings.Join(conf.Options, " ")}
		add(MetricNearTimeoutShare, "ratio", float64(all)/float64(len(s)), l)
		add(MetricNearTimeout, "count", float64(all), l)
		res.Records = append(res.Records, result.Record{ID: "client:" + c.Node, Labels: map[string]string{"resolver": c.Lookups.Resolver,
			"nameservers": strings.Join(conf.Nameservers, " "), "options": strings.Join(conf.Options, " ")},
			Values: map[string]float64{"timeout_seconds": t, "attempts": float64(conf.Attempts)}})
	}
	if total == 0 {
		res.Status, res.Reason = result.StatusError, "no lookup was made"
	}
	return res
}

package apislo

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The API tier: what the apiserver's own /metrics say of the control plane, readable on every cluster
// (managed ones included) with the grant `kubeslow rbac` prints (get on the non-resource URL /metrics).
const (
	// MetricAPFInqueuePeak is the most requests waiting in API Priority and Fairness queues at a step (label
	// priority_level; apiserver_flowcontrol_current_inqueue_requests): requests queue when a level's seats are
	// all taken.
	MetricAPFInqueuePeak = "apf_inqueue_peak"
	// MetricAPFExecutingSeatsPeak is the most seats executing at a step (label priority_level;
	// apiserver_flowcontrol_current_executing_seats).
	MetricAPFExecutingSeatsPeak = "apf_executing_seats_peak"
	// MetricAPFWaitP99 is the p99 of the time requests waited in APF queues (label priority_level).
	MetricAPFWaitP99 = "apf_wait_p99"
	// MetricEtcdRequestP99 is the p99 of the apiserver's calls to etcd (labels operation, type): the
	// apiserver's view of etcd, which includes the network and the apiserver's own wait for a CPU.
	MetricEtcdRequestP99 = "etcd_request_p99"
	// MetricEtcdDBBytes is etcd's database size as the apiserver reports it (label series: the family's name,
	// which changed with the version: etcd_db_total_size_in_bytes up to 1.25,
	// apiserver_storage_db_total_size_in_bytes in 1.26-1.27, apiserver_storage_size_bytes from 1.28).
	MetricEtcdDBBytes = "etcd_db_size_bytes"
	// MetricObjects is the number of stored objects of a resource at the end of the window (label resource;
	// apiserver_storage_objects, or apiserver_resource_objects where that is the name), the largest first.
	MetricObjects = "objects"
	// MetricListEvaluatedPerSecond and MetricListReturnedPerSecond are the objects LISTs read from storage and
	// returned to clients (label resource; apiserver_storage_list_evaluated_objects_total,
	// apiserver_storage_list_returned_objects_total); MetricListEvaluatedPerReturned is their ratio: an
	// expensive LIST filters many objects to return few (a label or field selector served from etcd).
	MetricListEvaluatedPerSecond   = "list_evaluated_objects_per_second"
	MetricListReturnedPerSecond    = "list_returned_objects_per_second"
	MetricListEvaluatedPerReturned = "list_evaluated_per_returned"
	// MetricReplicaStart is process_start_time_seconds of the apiserver that answered the window's first and
	// last scrape (label scrape: first, last; value: Unix seconds): behind a load balancer two values are two
	// replicas, and the window's counter deltas then mix them.
	MetricReplicaStart = "replica_start_time"
)

// topResources is how many resources the per-resource figures list.
const topResources = 10

// dbSizeFamilies are the names etcd's database size has had in the apiserver's metrics, newest first.
var dbSizeFamilies = []string{"apiserver_storage_size_bytes", "apiserver_storage_db_total_size_in_bytes", "etcd_db_total_size_in_bytes"}

// apiTier adds the API tier's figures of the window to res (pure).
func apiTier(res *result.Result, before, after *prom.Snapshot, secs float64) []string {
	var notes []string
	add := func(name, unit string, v float64, labels map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: labels})
	}
	// etcd's database size, under whichever name this apiserver uses; the largest of its members or clusters.
	for _, fam := range dbSizeFamilies {
		best, found := 0.0, false
		for _, s := range after.Series(fam) {
			if !found || s.Value > best {
				best, found = s.Value, true
			}
		}
		if found {
			add(MetricEtcdDBBytes, "bytes", best, map[string]string{"series": fam})
			break
		}
	}
	// Stored objects by resource.
	for _, fam := range []string{"apiserver_resource_objects", "apiserver_storage_objects"} {
		ss := after.Series(fam)
		if len(ss) == 0 {
			continue
		}
		byRes := map[string]float64{}
		for _, s := range ss {
			r := s.Labels["resource"]
			if g := s.Labels["group"]; g != "" {
				r += "." + g
			}
			byRes[r] = max(byRes[r], s.Value)
		}
		for _, r := range topKeys(byRes, topResources) {
			add(MetricObjects, "count", byRes[r], map[string]string{"resource": r})
		}
		break
	}
	// LISTs read from storage against what they returned, by resource.
	if secs > 0 {
		sum := func(fam string) map[string]float64 {
			out := map[string]float64{}
			for _, s := range prom.Delta(before, after, fam) {
				out[s.Labels["resource"]] += s.Value
			}
			return out
		}
		evaluated, returned := sum("apiserver_storage_list_evaluated_objects_total"), sum("apiserver_storage_list_returned_objects_total")
		for _, r := range topKeys(evaluated, topResources/2) {
			if evaluated[r] <= 0 {
				continue
			}
			l := map[string]string{"resource": r}
			add(MetricListEvaluatedPerSecond, "objects_per_second", evaluated[r]/secs, l)
			add(MetricListReturnedPerSecond, "objects_per_second", returned[r]/secs, l)
			if returned[r] > 0 {
				add(MetricListEvaluatedPerReturned, "ratio", evaluated[r]/returned[r], l)
			}
		}
	}
	// Which replica answered.
	s0, ok0 := before.Gauge("process_start_time_seconds", nil)
	s1, ok1 := after.Gauge("process_start_time_seconds", nil)
	if ok0 && ok1 {
		add(MetricReplicaStart, "unix_seconds", s0, map[string]string{"scrape": "first"})
		add(MetricReplicaStart, "unix_seconds", s1, map[string]string{"scrape": "last"})
		if s0 != s1 {
			notes = append(notes, fmt.Sprintf("the window's first and last scrapes were answered by two apiserver processes (started %s and %s: replicas behind a load balancer, or a restart): its deltas mix them",
				replicaName(s0), replicaName(s1)))
		}
	}
	return notes
}

// ReplicaName names an apiserver replica by its process start time, as the reports say it.
func replicaName(start float64) string {
	return time.Unix(int64(start), 0).UTC().Format(time.RFC3339)
}

// topKeys are the n keys of m with the largest values (ties by key).
func topKeys(m map[string]float64, n int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys[:min(n, len(keys))]
}

// apfStep is one step's API Priority and Fairness queue and seats (pure), by priority level.
func apfStep(cur *prom.Snapshot) []result.Metric {
	var out []result.Metric
	for fam, name := range map[string]string{"apiserver_flowcontrol_current_inqueue_requests": "apf_inqueue", "apiserver_flowcontrol_current_executing_seats": "apf_executing_seats"} {
		by := map[string]float64{}
		for _, s := range cur.Series(fam) {
			by[s.Labels["priority_level"]] += s.Value
		}
		for _, pl := range topKeys(by, len(by)) {
			out = append(out, result.Metric{Name: name, Unit: "count", Value: by[pl], Labels: map[string]string{"priority_level": pl}})
		}
	}
	return out
}

// observation adds the peaks only the steps show to the window's analysis.
type observation struct{ *measure.Scrapes }

// Gather implements measure.Observation.
func (o *observation) Gather(ctx context.Context) (result.Result, error) {
	res, err := o.Scrapes.Gather(ctx)
	if err != nil {
		return res, err
	}
	FromSteps(&res)
	return res, nil
}

// FromSteps adds the peak APF queue and seats per priority level over the steps (levels that queued nothing
// are left out of the queue's peaks).
func FromSteps(res *result.Result) {
	for _, s := range res.Series {
		var name string
		switch s.Name {
		case "apf_inqueue":
			name = MetricAPFInqueuePeak
		case "apf_executing_seats":
			name = MetricAPFExecutingSeatsPeak
		default:
			continue
		}
		peak := 0.0
		for _, p := range s.Points {
			peak = max(peak, p.V)
		}
		if name == MetricAPFInqueuePeak && peak == 0 {
			continue
		}
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: "count", Value: peak, Labels: s.Labels})
	}
}

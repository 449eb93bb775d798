package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// OverheadName is the result that reports kubeslow's own cost during a benchmark: the CPU it used, its
// peak resident memory and the apiserver requests it sent (issue: "report kubeslow's own CPU and peak
// memory and the apiserver requests it issued").
const OverheadName = result.SelfPrefix + "overhead"

// peakRSSTarget is the memory budget for a 10,000-pod benchmark.
const peakRSSTarget = 200 << 20

type cpuMark struct {
	wall     time.Time
	cpu      time.Duration
	hwmReset bool
}

func cpuNow() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// markNow records the CPU used so far and resets the kernel's peak-RSS mark (VmHWM), so the peak reported
// is the benchmark's, not the process's whole life's.
func markNow() cpuMark {
	c, _ := cpuNow()
	m := cpuMark{wall: time.Now(), cpu: c}
	// "5" resets the peak resident set size (proc(5), clear_refs; Linux 4.0+).
	m.hwmReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	return m
}

// overhead measures the process since start; bo (may be nil) is the client's limiter, whose responses by
// code and rate cuts say whether the apiserver throttled kubeslow (kubeslow's own status, not a finding).
func overhead(start cpuMark, reqs *kube.RequestCounter, bo *kube.Backoff) result.Result {
	r := result.Result{Name: OverheadName, Status: result.StatusPass, Start: start.wall, End: time.Now()}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		r.Status, r.Reason = result.StatusError, fmt.Sprintf("getrusage: %v", err)
		return r
	}
	cpu := time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) - start.cpu
	wall := r.End.Sub(start.wall)
	peak := float64(ru.Maxrss) * 1024 // the process's lifetime peak (Linux reports kilobytes)
	if start.hwmReset {
		if hwm, err := hostfs.Host().SelfVmHWM(); err == nil {
			peak = float64(hwm)
		}
	}
	r.Metrics = append(r.Metrics,
		result.Metric{Name: "cpu", Unit: "seconds", Value: cpu.Seconds()},
		result.Metric{Name: "cpu_cores_avg", Unit: "cores", Value: cpu.Seconds() / max(wall.Seconds(), 1e-9)},
		result.Metric{Name: "peak_rss", Unit: "bytes", Value: peak},
	)
	total, bytes := 0, int64(0)
	if reqs != nil {
		for _, c := range reqs.Counts() {
			total += c.N
			bytes += c.Bytes
			labels := map[string]string{"verb": c.Verb, "resource": c.Resource}
			r.Metrics = append(r.Metrics, result.Metric{Name: "api_requests", Unit: "count", Value: float64(c.N), Labels: labels},
				result.Metric{Name: "api_bytes_read", Unit: "bytes", Value: float64(c.Bytes), Labels: labels})
		}
		// The same by measurement ("" for the run's own requests: discovery, preflight, its namespace), so that a
		// benchmark can tell which measurement's requests grow with the cluster.
		for _, c := range reqs.ByMeasurement() {
			m := c.Measurement
			if m == "" {
				m = "(run)"
			}
			labels := map[string]string{"measurement": m, "verb": c.Verb, "resource": c.Resource}
			r.Metrics = append(r.Metrics, result.Metric{Name: "api_requests_by_measurement", Unit: "count", Value: float64(c.N), Labels: labels},
				result.Metric{Name: "api_bytes_read_by_measurement", Unit: "bytes", Value: float64(c.Bytes), Labels: labels})
		}
	}
	r.Metrics = append(r.Metrics, result.Metric{Name: "api_requests_total", Unit: "count", Value: float64(total)},
		result.Metric{Name: "api_bytes_read_total", Unit: "bytes", Value: float64(bytes)})
	var why []string
	if bo != nil {
		s := bo.Stats()
		r.Metrics = append(r.Metrics, backoffMetrics(s)...)
		if len(s.Rate) > 1 {
			ser := result.Series{Name: "client_rate_limit", Unit: "requests/s"}
			for _, p := range s.Rate {
				ser.Points = append(ser.Points, result.Point{T: p.At, V: p.Rate})
			}
			r.Series = append(r.Series, ser)
		}
		if sum := s.Summary(); sum != "" {
			why = append(why, sum)
		}
	}
	if peak > peakRSSTarget {
		why = append(why, fmt.Sprintf("peak RSS %.0f MiB above the %d MiB budget", peak/(1<<20), peakRSSTarget>>20))
	}
	if len(why) > 0 {
		r.Status, r.Reason = result.StatusWarn, strings.Join(why, "; ")
	}
	return r
}

// backoffMetrics are the client limiter's counts: responses by code, 429s, slow responses, requests with no
// response, and the rate it started at, fell to and ended at.
func backoffMetrics(s kube.BackoffStats) []result.Metric {
	var ms []result.Metric
	for _, c := range s.Codes {
		ms = append(ms, result.Metric{Name: "api_responses", Unit: "count", Value: float64(c.N), Labels: map[string]string{"code": strconv.Itoa(c.Code)}})
	}
	return append(ms,
		result.Metric{Name: "api_throttled", Unit: "count", Value: float64(s.Throttled)},
		result.Metric{Name: "api_slow_responses", Unit: "count", Value: float64(s.Slow)},
		result.Metric{Name: "api_transport_errors", Unit: "count", Value: float64(s.TransportErrors)},
		result.Metric{Name: "client_rate_cuts", Unit: "count", Value: float64(s.Decreases)},
		result.Metric{Name: "client_rate_configured", Unit: "requests/s", Value: s.Configured},
		result.Metric{Name: "client_rate_min", Unit: "requests/s", Value: s.Min},
		result.Metric{Name: "client_rate_final", Unit: "requests/s", Value: s.Final},
	)
}

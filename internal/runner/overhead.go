package runner

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubeslow/kubeslow/internal/kube"
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

// vmHWM reads the peak resident set size (bytes) from /proc/self/status.
func vmHWM() (float64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM %q: %w", v, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// overhead measures the process since start.
func overhead(start cpuMark, reqs *kube.RequestCounter) result.Result {
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
		if hwm, err := vmHWM(); err == nil {
			peak = hwm
		}
	}
	r.Metrics = append(r.Metrics,
		result.Metric{Name: "cpu", Unit: "seconds", Value: cpu.Seconds()},
		result.Metric{Name: "cpu_cores_avg", Unit: "cores", Value: cpu.Seconds() / max(wall.Seconds(), 1e-9)},
		result.Metric{Name: "peak_rss", Unit: "bytes", Value: peak},
	)
	total := 0
	if reqs != nil {
		for _, c := range reqs.Counts() {
			total += c.N
			r.Metrics = append(r.Metrics, result.Metric{Name: "api_requests", Unit: "count", Value: float64(c.N),
				Labels: map[string]string{"verb": c.Verb, "resource": c.Resource}})
		}
	}
	r.Metrics = append(r.Metrics, result.Metric{Name: "api_requests_total", Unit: "count", Value: float64(total)})
	if peak > peakRSSTarget {
		r.Status = result.StatusWarn
		r.Reason = fmt.Sprintf("peak RSS %.0f MiB above the %d MiB budget", peak/(1<<20), peakRSSTarget>>20)
	}
	return r
}

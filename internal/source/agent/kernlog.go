package agent

import (
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// Kernel log lines that matter to a slow cluster, by class. Each class is counted and its newest line kept.
const (
	// KernNeighOverflow: the neighbour (ARP/NDP) table hit gc_thresh3 (case B: connects took 30 s).
	KernNeighOverflow = "neighbor_table_overflow"
	// KernConntrackFull: conntrack dropped a new flow ("nf_conntrack: table full, dropping packet").
	KernConntrackFull = "conntrack_table_full"
	// KernHungTask: a task blocked in D state past kernel.hung_task_timeout_secs (case C).
	KernHungTask = "hung_task"
	// KernOOMKill: the kernel's OOM killer killed a process (in a cgroup or the whole node).
	KernOOMKill = "oom_kill"
)

// KernelClasses lists the classes in report order.
var KernelClasses = []string{KernNeighOverflow, KernConntrackFull, KernHungTask, KernOOMKill}

var kernPatterns = []struct {
	class string
	re    *regexp.Regexp
}{
	{KernNeighOverflow, regexp.MustCompile(`neighbou?r table overflow`)},
	{KernConntrackFull, regexp.MustCompile(`nf_conntrack: table full`)},
	{KernHungTask, regexp.MustCompile(`blocked for more than \d+ seconds`)},
	// An OOM kill logs many lines; "Killed process N" (node or memory cgroup) comes once per kill.
	{KernOOMKill, regexp.MustCompile(`Killed process \d+`)},
}

// ClassifyKernelLine returns the class of a kernel log message ("" when it does not matter here).
func ClassifyKernelLine(msg string) string {
	for _, p := range kernPatterns {
		if p.re.MatchString(msg) {
			return p.class
		}
	}
	return ""
}

// KernelLog is what the kernel log held of the classes above.
type KernelLog struct {
	// Source is where it was read ("/dev/kmsg" or a log file) and Lines how many lines were read.
	Source string `json:"source"`
	Lines  int    `json:"lines"`
	// Unreadable counts the records or lines skipped: a kmsg record that does not parse, a log line over
	// maxKernelLine. The scan goes on after each.
	Unreadable int `json:"unreadable,omitempty"`
	// Counts and Newest (the newest line's text) by class; classes without a line are absent.
	Counts map[string]int    `json:"counts,omitempty"`
	Newest map[string]string `json:"newest,omitempty"`
	// NewestAgo is how long before the read the newest line of the class was logged (kmsg only).
	NewestAgoSeconds map[string]float64 `json:"newest_ago_seconds,omitempty"`
	// OOMKills are the OOM killer's kills, oldest first (the newest MaxOOMKills), each with the cgroups it
	// names: which pod and container it killed, and whose limit it enforced.
	OOMKills []OOMKill `json:"oom_kills,omitempty"`
}

func (k *KernelLog) add(msg string, ago time.Duration) {
	k.Lines++
	if strings.Contains(msg, "oom-kill:") || strings.Contains(msg, "Killed process") {
		a := -1.0
		if ago >= 0 {
			a = ago.Seconds()
		}
		k.addOOM(msg, a)
	}
	c := ClassifyKernelLine(msg)
	if c == "" {
		return
	}
	if k.Counts == nil {
		k.Counts, k.Newest, k.NewestAgoSeconds = map[string]int{}, map[string]string{}, map[string]float64{}
	}
	k.Counts[c]++
	k.Newest[c] = msg
	if ago >= 0 {
		k.NewestAgoSeconds[c] = ago.Seconds()
	}
}

// ScanKmsg reads kmsg records from r (hostfs.ScanKmsg) into a KernelLog. uptime is the time since boot at
// the read, for the age of lines.
func ScanKmsg(r io.Reader, uptime time.Duration) (KernelLog, error) {
	k := KernelLog{Source: "/dev/kmsg"}
	n, err := hostfs.ScanKmsg(r, uptime, k.add)
	k.Unreadable = n
	return k, err
}

// ScanKernelLogFile reads a syslog-style kernel log (hostfs.ScanKernelLogFile) into a KernelLog.
func ScanKernelLogFile(r io.Reader, source string, uptime time.Duration) (KernelLog, error) {
	k := KernelLog{Source: source}
	n, err := hostfs.ScanKernelLogFile(r, uptime, k.add)
	k.Unreadable = n
	return k, err
}

// readKernelLog reads the host's kernel log (hostfs.FS.KernelLog), aged against its uptime.
func readKernelLog(host hostfs.FS) (KernelLog, error) {
	var k KernelLog
	src, n, err := host.KernelLog(k.add)
	k.Source, k.Unreadable = src, n
	return k, err
}

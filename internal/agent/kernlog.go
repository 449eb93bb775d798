package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
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

// KmsgRecord is one /dev/kmsg record: "prio,seq,usec,flags[,...];message" (Documentation/ABI/testing/dev-kmsg).
type KmsgRecord struct {
	Seq uint64
	// Since is the time since boot the record was logged at.
	Since time.Duration
	Msg   string
}

// ParseKmsgRecord parses one record as read(2) returns it (continuation lines, starting with a space, are
// dropped).
func ParseKmsgRecord(b []byte) (KmsgRecord, error) {
	head, msg, ok := bytes.Cut(b, []byte(";"))
	if !ok {
		return KmsgRecord{}, fmt.Errorf("kmsg: no ';' in %.40q", b)
	}
	if i := bytes.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	f := bytes.Split(head, []byte(","))
	if len(f) < 3 {
		return KmsgRecord{}, fmt.Errorf("kmsg: header %.40q: want prio,seq,usec", head)
	}
	if _, err := strconv.ParseUint(string(f[0]), 10, 32); err != nil {
		return KmsgRecord{}, fmt.Errorf("kmsg priority: %w", err)
	}
	seq, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return KmsgRecord{}, fmt.Errorf("kmsg sequence: %w", err)
	}
	us, err := strconv.ParseUint(string(f[2]), 10, 63)
	if err != nil || us > uint64(1<<63-1)/1000 {
		return KmsgRecord{}, fmt.Errorf("kmsg timestamp %q: want microseconds since boot", f[2])
	}
	return KmsgRecord{Seq: seq, Since: time.Duration(us) * time.Microsecond, Msg: string(msg)}, nil
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

// ScanKmsg reads kmsg records from r (each read returns one record) until io.EOF or EAGAIN (the end of the
// buffer on a non-blocking /dev/kmsg). uptime is the time since boot at the read, for the age of lines.
func ScanKmsg(r io.Reader, uptime time.Duration) (KernelLog, error) {
	k := KernelLog{Source: "/dev/kmsg"}
	buf := make([]byte, 8192) // a record is at most 1 KiB of text plus its dictionary
	for {
		n, err := r.Read(buf)
		if n > 0 {
			rec, perr := ParseKmsgRecord(buf[:n])
			if perr == nil {
				k.add(rec.Msg, uptime-rec.Since)
			} else {
				k.Unreadable++
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, syscall.EAGAIN):
			return k, nil
		case errors.Is(err, syscall.EPIPE): // records overwritten while reading: go on from the next one
		default:
			return k, err
		}
	}
}

// ScanKernelLogFile reads a syslog-style kernel log (one line per message, e.g. /var/log/kern.log). A line
// that carries the kernel's own timestamp ("kernel: [ 5130.000001] ...", seconds since boot) is aged against
// uptime, the time since boot at the read, when that is known and the stamp is not past it (a line of an
// earlier boot has an unknown age).
func ScanKernelLogFile(r io.Reader, source string, uptime time.Duration) (KernelLog, error) {
	k := KernelLog{Source: source}
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	long := false
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case long:
			// The rest of a line over maxKernelLine: dropped with it.
		case len(line)+len(frag) > maxKernelLine:
			k.Unreadable++
			long, line = true, line[:0]
		default:
			line = append(line, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !long && len(line) > 0 {
			text := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
			ago := time.Duration(-1)
			if since, ok := kernelStamp(text); ok && uptime > 0 && since <= uptime {
				ago = uptime - since
			}
			k.add(text, ago)
		}
		long, line = false, line[:0]
		if errors.Is(err, io.EOF) {
			return k, nil
		}
		if err != nil {
			return k, err
		}
	}
}

// maxKernelLine is the longest kernel log line read (a kernel message is at most 1 KiB; a syslog line adds
// its prefix): a longer one is counted in Unreadable and skipped, the lines after it are read.
const maxKernelLine = 1 << 20

// kernelStamp is the "[ seconds.micros]" stamp of a kernel log line (seconds since boot).
func kernelStamp(line string) (time.Duration, bool) {
	i := strings.Index(line, "kernel: [")
	if i < 0 {
		return 0, false
	}
	rest := line[i+len("kernel: ["):]
	j := strings.IndexByte(rest, ']')
	if j < 0 {
		return 0, false
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(rest[:j]), 64)
	if err != nil || secs < 0 || secs > 1e9 {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

// readKernelLog reads the kernel's ring buffer from root/dev/kmsg (needs CAP_SYSLOG when
// kernel.dmesg_restrict=1, and a device the container may open), else the first host log file that exists.
func readKernelLog(root, proc string) (KernelLog, error) {
	// A raw non-blocking descriptor: an *os.File would park the read in Go's poller at the end of the buffer
	// instead of returning EAGAIN.
	fd, kerr := syscall.Open(filepath.Join(root, "dev/kmsg"), syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if kerr == nil {
		defer syscall.Close(fd)
		return ScanKmsg(rawReader(fd), uptime(proc))
	}
	for _, p := range []string{"var/log/kern.log", "var/log/messages"} {
		lf, err := os.Open(filepath.Join(root, p))
		if err != nil {
			continue
		}
		defer lf.Close()
		// The tail is enough: the newest 16 MiB.
		if st, err := lf.Stat(); err == nil && st.Size() > 16<<20 {
			_, _ = lf.Seek(st.Size()-16<<20, io.SeekStart)
		}
		return ScanKernelLogFile(lf, "/"+p, uptime(proc))
	}
	return KernelLog{}, fmt.Errorf("/dev/kmsg: %v (and no /var/log/kern.log or /var/log/messages)", kerr)
}

// uptime reads proc/uptime (0 when unreadable: ages are then not meaningful, and ScanKmsg's are negative).
func uptime(proc string) time.Duration {
	b, err := os.ReadFile(filepath.Join(proc, "uptime"))
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0
	}
	s, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// rawReader reads a descriptor with read(2), errors (EAGAIN included) as they come.
type rawReader int

func (r rawReader) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(r), b)
		if err == syscall.EINTR {
			continue
		}
		if n < 0 {
			n = 0
		}
		if err == nil && n == 0 {
			return 0, io.EOF
		}
		return n, err
	}
}

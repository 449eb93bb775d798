package hostfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The kernel log, which procfs does not read: /dev/kmsg's records, or a syslog-style log file. Each message
// is handed on with its age (how long before the read it was logged; negative when unknown); what the
// messages mean is the reader's business.

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

// ScanKmsg reads kmsg records from r (each read returns one record) until io.EOF or EAGAIN (the end of the
// buffer on a non-blocking /dev/kmsg), handing each message to fn. uptime is the time since boot at the read,
// for the age of messages. It returns how many records did not parse (the scan goes on after each).
func ScanKmsg(r io.Reader, uptime time.Duration, fn func(msg string, ago time.Duration)) (unreadable int, err error) {
	buf := make([]byte, 8192) // a record is at most 1 KiB of text plus its dictionary
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if rec, perr := ParseKmsgRecord(buf[:n]); perr == nil {
				fn(rec.Msg, uptime-rec.Since)
			} else {
				unreadable++
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, syscall.EAGAIN):
			return unreadable, nil
		case errors.Is(err, syscall.EPIPE): // records overwritten while reading: go on from the next one
		default:
			return unreadable, err
		}
	}
}

// MaxKernelLine is the longest kernel log line read (a kernel message is at most 1 KiB; a syslog line adds
// its prefix): a longer one is counted unreadable and skipped, the lines after it are read.
const MaxKernelLine = 1 << 20

// ScanKernelLogFile reads a syslog-style kernel log (one line per message, e.g. /var/log/kern.log), handing
// each line to fn. A line that carries the kernel's own timestamp ("kernel: [ 5130.000001] ...", seconds since
// boot) is aged against uptime, the time since boot at the read, when that is known and the stamp is not
// past it (a line of an earlier boot has an unknown age, -1). It returns how many lines were too long.
func ScanKernelLogFile(r io.Reader, uptime time.Duration, fn func(msg string, ago time.Duration)) (unreadable int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	long := false
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case long:
			// The rest of a line over MaxKernelLine: dropped with it.
		case len(line)+len(frag) > MaxKernelLine:
			unreadable++
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
			fn(text, ago)
		}
		long, line = false, line[:0]
		if errors.Is(err, io.EOF) {
			return unreadable, nil
		}
		if err != nil {
			return unreadable, err
		}
	}
}

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

// KernelLog reads the kernel's ring buffer from Root/dev/kmsg (needs CAP_SYSLOG when
// kernel.dmesg_restrict=1, and a device the container may open), else the first host log file under Root
// that exists, handing each message to fn. It returns where it read and how many records or lines it skipped.
func (f FS) KernelLog(fn func(msg string, ago time.Duration)) (source string, unreadable int, err error) {
	root := f.Root
	// A raw non-blocking descriptor: an *os.File would park the read in Go's poller at the end of the buffer
	// instead of returning EAGAIN.
	fd, kerr := syscall.Open(filepath.Join(root, "dev/kmsg"), syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if kerr == nil {
		defer syscall.Close(fd)
		n, err := ScanKmsg(rawReader(fd), f.Uptime(), fn)
		return "/dev/kmsg", n, err
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
		n, err := ScanKernelLogFile(lf, f.Uptime(), fn)
		return "/" + p, n, err
	}
	return "", 0, fmt.Errorf("/dev/kmsg: %v (and no /var/log/kern.log or /var/log/messages)", kerr)
}

// Uptime reads proc/uptime (0 when unreadable: ages are then not meaningful, and ScanKmsg's are negative).
func (f FS) Uptime() time.Duration {
	b, err := os.ReadFile(filepath.Join(f.Proc, "uptime"))
	if err != nil {
		return 0
	}
	fs := bytes.Fields(b)
	if len(fs) == 0 {
		return 0
	}
	s, err := strconv.ParseFloat(string(fs[0]), 64)
	if err != nil || s < 0 || s > 1e12 {
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

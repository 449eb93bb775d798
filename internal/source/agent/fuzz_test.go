package agent

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The parsers of kernel files and log lines must never panic, and what they accept must be consistent.

func FuzzScanKernelLogFile(f *testing.F) {
	f.Add([]byte("Nov 23 kernel: INFO: task a:1 blocked for more than 120 seconds.\nneighbor table overflow\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ScanKernelLogFile(bytes.NewReader(b), "f", time.Hour)
		total := 0
		for _, n := range k.Counts {
			total += n
		}
		if err == nil && (total > k.Lines || k.Lines+k.Unreadable > bytes.Count(b, []byte("\n"))+1) {
			t.Fatalf("%d classified lines of %d (%d unreadable)", total, k.Lines, k.Unreadable)
		}
	})
}

func FuzzActiveScheduler(f *testing.F) {
	f.Add("mq-deadline [none]")
	f.Add("[bfq")
	f.Fuzz(func(t *testing.T, s string) {
		if got := ActiveScheduler(s); len(got) > len(s) {
			t.Fatalf("%q from %q", got, s)
		}
	})
}

func FuzzParseFlags(f *testing.F) {
	f.Add("--audit-log-path /x --kube-apiserver-arg=a=b --kube-apiserver-arg c=d -- --=")
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, " ")
		m := ParseFlags(args)
		for k := range m {
			if k == "" || strings.HasPrefix(k, "-") || strings.Contains(k, "=") {
				t.Fatalf("flag name %q from %q", k, s)
			}
		}
		_ = K3sComponentFlags(m, CompAPIServer)
		_ = ReadFlags(CompK3s, args)
	})
}

func FuzzRotatedOf(f *testing.F) {
	f.Add("audit.log", "audit-2024-05-01T10-00-00.000.log")
	f.Fuzz(func(t *testing.T, active, file string) {
		stamp, _, ok := RotatedOf(active, file)
		if ok && (len(stamp) != len(lumberjackTime) || file == active) {
			t.Fatalf("%q of %q: %q", file, active, stamp)
		}
	})
}

func FuzzManifestCommands(f *testing.F) {
	f.Add([]byte("spec: {containers: [{command: [etcd], args: [--x=y]}]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, argv := range ManifestCommands(b) {
			if len(argv) == 0 {
				t.Fatal("empty command line")
			}
		}
		_ = KubeletStaticPodPath(b)
	})
}

package ebpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// The tracepoint the connect tracer attaches to.
const (
	tpGroup = "sock"
	tpName  = "inet_sock_set_state"
)

// tracefsMount is where tracefs is mounted when no tracefs is found (the kernel's own mount point).
const tracefsMount = "/sys/kernel/tracing"

// Capability numbers (include/uapi/linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// Supported says whether this process can run the connect tracer here: nil, or an error whose sentence
// says why not (no CAP_BPF and CAP_PERFMON, nor CAP_SYS_ADMIN; a kernel older than 5.8; no ring buffer; no
// BTF; tracefs absent and not mountable; no sock/inet_sock_set_state tracepoint or one of another layout).
// It mounts tracefs at /sys/kernel/tracing when none is mounted, as StartConnects would.
func Supported() error {
	_, err := supported()
	return err
}

// supported is Supported, returning the tracepoint's layout.
func supported() (setStateLayout, error) {
	var l setStateLayout
	if err := supportedBase(); err != nil {
		return l, err
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return l, fmt.Errorf("the kernel has no BTF (/sys/kernel/btf/vmlinux: %w); it needs CONFIG_DEBUG_INFO_BTF", err)
	}
	dir, err := tracefs()
	if err != nil {
		return l, err
	}
	format, err := os.ReadFile(filepath.Join(dir, "events", tpGroup, tpName, "format"))
	if errors.Is(err, os.ErrNotExist) {
		return l, fmt.Errorf("the kernel has no tracepoint %s/%s (added in 4.16)", tpGroup, tpName)
	}
	if err != nil {
		return l, fmt.Errorf("reading the tracepoint %s/%s's format: %w", tpGroup, tpName, err)
	}
	fields, err := parseFormat(string(format))
	if err == nil {
		l, err = layoutFor(fields)
	}
	if err != nil {
		return l, fmt.Errorf("the tracepoint %s/%s's format is not the one the tracer reads: %w", tpGroup, tpName, err)
	}
	return l, nil
}

// SupportedDNS says whether this process can run the DNS tracer here: nil, or an error whose sentence says
// why not (no CAP_BPF and CAP_PERFMON, nor CAP_SYS_ADMIN; a kernel older than 5.8; no ring buffer; no
// cgroup v2 hierarchy mounted; no cgroup_skb programs, or one of the helpers they call). It needs no BTF
// and no tracefs: the programs read packets, not kernel structures.
func SupportedDNS() error {
	if err := supportedBase(); err != nil {
		return err
	}
	if _, err := CgroupRoot(); err != nil {
		return err
	}
	return supportedCgroupSKB()
}

// SupportedDNSAt is SupportedDNS for the cgroup v2 directory cgroupDir, wherever it is mounted: the host's
// hierarchy seen by a node agent under its host root (HostCgroupRoot), which its own mountinfo does not show.
func SupportedDNSAt(cgroupDir string) error {
	if err := supportedBase(); err != nil {
		return err
	}
	if err := checkCgroup2Dir(cgroupDir); err != nil {
		return err
	}
	return supportedCgroupSKB()
}

// supportedCgroupSKB checks the cgroup_skb program type and the helpers the DNS programs call.
func supportedCgroupSKB() error {
	if err := features.HaveProgramType(cebpf.CGroupSKB); err != nil {
		return fmt.Errorf("the kernel has no cgroup_skb BPF programs: %w", err)
	}
	for _, h := range []struct {
		fn   asm.BuiltinFunc
		name string
	}{{asm.FnSkbLoadBytes, "bpf_skb_load_bytes"}, {asm.FnSkbCgroupId, "bpf_skb_cgroup_id (CONFIG_SOCK_CGROUP_DATA)"}, {asm.FnRingbufOutput, "bpf_ringbuf_output"}, {asm.FnRingbufQuery, "bpf_ringbuf_query"}} {
		if err := features.HaveProgramHelper(cebpf.CGroupSKB, h.fn); err != nil {
			return fmt.Errorf("the kernel's cgroup_skb programs cannot call %s: %w", h.name, err)
		}
	}
	return nil
}

// supportedBase is what both tracers need: the capabilities, a kernel of 5.8 or later, and the ring buffer.
func supportedBase() error {
	if err := checkCaps(); err != nil {
		return err
	}
	v, err := features.LinuxVersionCode()
	if err != nil {
		return fmt.Errorf("cannot tell the kernel's version: %w", err)
	}
	if v < 5<<16|8<<8 {
		return fmt.Errorf("the kernel is %d.%d, older than 5.8 (the BPF ring buffer and CAP_BPF)", v>>16, v>>8&0xff)
	}
	if err := features.HaveMapType(cebpf.RingBuf); err != nil {
		return fmt.Errorf("the kernel has no BPF ring buffer: %w", err)
	}
	return nil
}

// checkCaps checks the effective capabilities: CAP_BPF and CAP_PERFMON (kernel 5.8+), or CAP_SYS_ADMIN.
func checkCaps() error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("cannot read this process's capabilities: %w", err)
	}
	for line := range strings.Lines(string(status)) {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		eff, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return fmt.Errorf("cannot parse this process's capabilities %q: %w", strings.TrimSpace(line), err)
		}
		has := func(c uint) bool { return eff&(1<<c) != 0 }
		if has(capSysAdmin) || has(capBPF) && has(capPerfmon) {
			return nil
		}
		return fmt.Errorf("this process lacks CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN): run it as root or privileged (effective uid %d)", os.Geteuid())
	}
	return errors.New("cannot find this process's effective capabilities in /proc/self/status")
}

// tracefs returns a tracefs directory (one with events/), mounting tracefs at /sys/kernel/tracing if none is.
func tracefs() (string, error) {
	for _, dir := range []string{tracefsMount, "/sys/kernel/debug/tracing"} {
		if fi, err := os.Stat(filepath.Join(dir, "events")); err == nil && fi.IsDir() {
			return dir, nil
		}
	}
	if err := unix.Mount("tracefs", tracefsMount, "tracefs", 0, ""); err != nil {
		return "", fmt.Errorf("tracefs is not mounted and mounting it at %s failed: %w (mount it, or run privileged)", tracefsMount, err)
	}
	if fi, err := os.Stat(filepath.Join(tracefsMount, "events")); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("tracefs mounted at %s has no events/", tracefsMount)
	}
	return tracefsMount, nil
}

package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// Sandbox is the pause (sandbox) image the node's container runtime starts every pod with, as its
// configuration names it.
type Sandbox struct {
	// Image is "" when the configuration leaves it at containerd's built-in default.
	Image string `json:"image"`
	// Source says where it was read: the runtime's configuration file, or its built-in default.
	Source string `json:"source"`
	// Present says whether the node's status lists the image (nil: unknown, e.g. the list is cut at
	// the kubelet's nodeStatusMaxImages); filled in by the measurement, not the agent.
	Present *bool `json:"present,omitempty"`
}

var (
	// containerd 1.x: sandbox_image = "..." under [plugins."io.containerd.grpc.v1.cri"]; 2.x: sandbox = '...'
	// under [plugins.'io.containerd.cri.v1.images'.pinned_images].
	sandboxLine = regexp.MustCompile(`(?m)^\s*(sandbox_image|sandbox)\s*=\s*["']([^"'\n]*)["']`)
	// [grpc] address = "..."
	grpcAddress = regexp.MustCompile(`(?m)^\s*address\s*=\s*["']([^"'\n]*)["']`)
)

// ParseContainerdSandbox returns the sandbox image and the gRPC address a containerd configuration names
// ("" when it names none).
func ParseContainerdSandbox(conf []byte) (image, address string) {
	if m := sandboxLine.FindSubmatch(conf); m != nil {
		image = string(m[2])
	}
	// The [grpc] table's address (ttrpc's and others' come in tables of their own).
	if i := bytes.Index(conf, []byte("[grpc]")); i >= 0 {
		rest := conf[i+len("[grpc]"):]
		if j := bytes.Index(rest, []byte("\n[")); j >= 0 {
			rest = rest[:j]
		}
		if m := grpcAddress.FindSubmatch(rest); m != nil {
			address = string(m[1])
		}
	}
	return image, address
}

// argValue is the value of flag (either -flag or --flag, "x" or "=x") in a NUL-separated command line.
func argValue(cmdline []byte, names ...string) string {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	for i, a := range args {
		for _, n := range names {
			for _, p := range []string{"-" + n, "--" + n} {
				if a == p && i+1 < len(args) {
					return args[i+1]
				}
				if v, ok := strings.CutPrefix(a, p+"="); ok {
					return v
				}
			}
		}
	}
	return ""
}

// readSandbox finds the node's containerd through the host's procfs and reads its sandbox image: the
// agent's own container's shim names the containerd socket it belongs to (a machine can run several, as
// the lab's nodes do), and that containerd's --config file (read through its /proc/PID/root) names the
// image.
func readSandbox(proc string) (*Sandbox, error) {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil, err
	}
	shimAddr := ownShimAddress(proc)
	type cand struct{ pid, conf string }
	var cands []cand
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(proc, e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "containerd" {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(proc, e.Name(), "cmdline"))
		conf := argValue(cmd, "config", "c")
		if conf == "" {
			conf = "/etc/containerd/config.toml"
		}
		cands = append(cands, cand{e.Name(), conf})
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("no containerd process in %s (another runtime, or no host procfs)", proc)
	}
	var errs []string
	for _, c := range cands {
		b, err := os.ReadFile(filepath.Join(proc, c.pid, "root", c.conf))
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		img, addr := ParseContainerdSandbox(b)
		if addr == "" {
			addr = "/run/containerd/containerd.sock"
		}
		if len(cands) > 1 && shimAddr != "" && addr != shimAddr {
			continue
		}
		s := &Sandbox{Image: img, Source: c.conf}
		if img == "" {
			// containerd's built-in default, which depends on its version (registry.k8s.io/pause:3.6 to 3.10).
			s.Source = c.conf + " names none: containerd's built-in default (registry.k8s.io/pause, by version)"
		}
		return s, nil
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("containerd configuration: %s", strings.Join(errs, "; "))
	}
	return nil, fmt.Errorf("none of %d containerd processes serves %s (the agent's own shim's)", len(cands), shimAddr)
}

// ownShimAddress is the containerd address the agent's own container's shim was started with: the host
// procfs's "self" is the agent's process as the host sees it; its ancestors include the shim.
func ownShimAddress(proc string) string {
	self, err := os.Readlink(filepath.Join(proc, "self"))
	if err != nil {
		return ""
	}
	pid := filepath.Base(self)
	for range 16 {
		comm, err := os.ReadFile(filepath.Join(proc, pid, "comm"))
		if err != nil {
			return ""
		}
		if strings.HasPrefix(strings.TrimSpace(string(comm)), "containerd-shim") {
			cmd, _ := os.ReadFile(filepath.Join(proc, pid, "cmdline"))
			return argValue(cmd, "address")
		}
		n, err := strconv.Atoi(pid)
		if err != nil {
			return ""
		}
		st, err := (hostfs.FS{Proc: proc}).ProcStat(n)
		if err != nil || st.PPID == 0 || st.PPID == n {
			return ""
		}
		pid = strconv.Itoa(st.PPID)
	}
	return ""
}

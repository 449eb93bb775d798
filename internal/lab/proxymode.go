package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// kube-proxy's modes (Config.ProxyMode, `lab up --proxy-mode`).
const (
	// ProxyIPTables is kube-proxy's iptables mode (Debian's iptables is nft-backed): the default, as before.
	ProxyIPTables = "iptables"
	// ProxyNFTables is kube-proxy's nftables mode: one map lookup per new connection whatever the Service count.
	ProxyNFTables = "nftables"
	// ProxyIPVS is kube-proxy's IPVS mode; it needs the kernel's IPVS (CONFIG_IP_VS) and ipset.
	ProxyIPVS = "ipvs"
)

// ProxyModes lists the values of --proxy-mode.
var ProxyModes = []string{ProxyIPTables, ProxyNFTables, ProxyIPVS}

// proxyModeOf is c's kube-proxy mode, the default filled in.
func proxyModeOf(c *Config) string {
	if c.ProxyMode == "" {
		return ProxyIPTables
	}
	return c.ProxyMode
}

// validateProxyMode checks that --proxy-mode names a mode; whether this host can run it is CheckProxyMode's.
func validateProxyMode(c *Config) error {
	switch proxyModeOf(c) {
	case ProxyIPTables, ProxyNFTables, ProxyIPVS:
	default:
		return fmt.Errorf("--proxy-mode %q: want one of %s", c.ProxyMode, strings.Join(ProxyModes, ", "))
	}
	if c.ProxyMode != "" && c.RealNodes == 0 {
		return errors.New("--proxy-mode needs real nodes (--real-nodes): kube-proxy runs only there")
	}
	return nil
}

// nftMinKernel is kube-proxy's own floor for its nftables mode (KEP-3866: kernel 5.13 or later).
var nftMinKernel = [2]int{5, 13}

// CheckProxyMode tells whether the kernel and tools under root (the host: "/") can run kube-proxy in mode, so
// that an unsupported mode is refused before anything starts rather than found as a kube-proxy that never
// gets healthy. lookPath finds the user-space tools kube-proxy calls (exec.LookPath on the nodes' PATH).
//   - iptables: the iptables binary.
//   - nftables: the nft binary and a kernel of 5.13 or later.
//   - ipvs: the kernel's IPVS, i.e. /proc/net/ip_vs (built in or loaded) or an ip_vs module kube-proxy could
//     load, and the ipset binary.
func CheckProxyMode(root, mode string, lookPath func(string) (string, error)) error {
	need := func(tool, why string) error {
		if _, err := lookPath(tool); err != nil {
			return fmt.Errorf("--proxy-mode %s: kube-proxy runs %s (%s), which is not installed here: %w", mode, tool, why, err)
		}
		return nil
	}
	switch mode {
	case "", ProxyIPTables:
		return need("iptables", "its rules")
	case ProxyNFTables:
		rel, err := os.ReadFile(filepath.Join(root, "proc/sys/kernel/osrelease"))
		if err != nil {
			return fmt.Errorf("--proxy-mode nftables: reading the kernel's release: %w", err)
		}
		v, err := kernelVersion(string(rel))
		if err != nil {
			return fmt.Errorf("--proxy-mode nftables: %w", err)
		}
		if v[0] < nftMinKernel[0] || (v[0] == nftMinKernel[0] && v[1] < nftMinKernel[1]) {
			return fmt.Errorf("--proxy-mode nftables: kernel %d.%d, kube-proxy's nftables mode needs %d.%d or later (use --proxy-mode iptables)",
				v[0], v[1], nftMinKernel[0], nftMinKernel[1])
		}
		return need("nft", "its ruleset, 1.0.1 or later")
	case ProxyIPVS:
		ok, why, err := ipvsAvailable(root)
		if err != nil {
			return fmt.Errorf("--proxy-mode ipvs: %w", err)
		}
		if !ok {
			return fmt.Errorf("--proxy-mode ipvs: this kernel has no IPVS (%s); kube-proxy would fall back or fail: use --proxy-mode iptables or nftables", why)
		}
		return need("ipset", "its address sets")
	}
	return fmt.Errorf("--proxy-mode %q: want one of %s", mode, strings.Join(ProxyModes, ", "))
}

// ipvsAvailable: IPVS is in the running kernel (/proc/net/ip_vs) or in a module under /lib/modules/<release>.
func ipvsAvailable(root string) (ok bool, why string, err error) {
	if _, err := os.Stat(filepath.Join(root, "proc/net/ip_vs")); err == nil {
		return true, "", nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, "", err
	}
	rel, err := os.ReadFile(filepath.Join(root, "proc/sys/kernel/osrelease"))
	if err != nil {
		return false, "", fmt.Errorf("reading the kernel's release: %w", err)
	}
	r := strings.TrimSpace(string(rel))
	dep, err := os.ReadFile(filepath.Join(root, "lib/modules", r, "modules.dep"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Sprintf("no /proc/net/ip_vs and no modules for kernel %s", r), nil
	}
	if err != nil {
		return false, "", err
	}
	for line := range strings.SplitSeq(string(dep), "\n") {
		mod, _, _ := strings.Cut(line, ":")
		if b := filepath.Base(mod); b == "ip_vs.ko" || strings.HasPrefix(b, "ip_vs.ko.") {
			return true, "", nil
		}
	}
	return false, fmt.Sprintf("no /proc/net/ip_vs and no ip_vs module for kernel %s (CONFIG_IP_VS off)", r), nil
}

// kernelVersion reads major and minor from a release string such as "6.18.44-fc-v782".
func kernelVersion(rel string) ([2]int, error) {
	rel = strings.TrimSpace(rel)
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return [2]int{}, fmt.Errorf("kernel release %q: want MAJOR.MINOR[.PATCH]", rel)
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return [2]int{}, fmt.Errorf("kernel release %q: want MAJOR.MINOR[.PATCH]", rel)
	}
	return [2]int{ma, mi}, nil
}

// CheckHost checks that this host can run what c asks of it (kube-proxy's mode on the real nodes), so that the
// command refuses it before anything starts.
func (c *Config) CheckHost() error {
	if c.RealNodes == 0 {
		return nil
	}
	return CheckProxyMode("/", c.ProxyMode, nodeLookPath)
}

// nodeLookPath finds a tool on the PATH the real nodes' processes get (sbinPath added to ours).
func nodeLookPath(tool string) (string, error) {
	for _, dir := range append(filepath.SplitList(os.Getenv("PATH")), "/usr/local/sbin", "/usr/sbin", "/sbin") {
		p := filepath.Join(dir, tool)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

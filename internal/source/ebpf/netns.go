package ebpf

import (
	"fmt"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// soNetnsCookie is SO_NETNS_COOKIE (include/uapi/asm-generic/socket.h, Linux 5.14+): a socket's network
// namespace cookie, the number bpf_get_netns_cookie returns for it.
const soNetnsCookie = 71

// NetnsCookie is the cookie of the calling thread's network namespace (of a socket made in it): what the DNS
// tracer's NetnsCookie is for the sockets of that namespace. A node agent with the host's network calls it
// for the node's.
func NetnsCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("a socket to read the network namespace's cookie: %w", err)
	}
	defer unix.Close(fd)
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, soNetnsCookie)
	if err != nil {
		return 0, fmt.Errorf("reading the network namespace's cookie (SO_NETNS_COOKIE, Linux 5.14+): %w", err)
	}
	return c, nil
}

// netnsCookieSupported says whether the kernel's cgroup_skb programs can call bpf_get_netns_cookie (not all
// kernels that have both allow it): if not, the DNS programs record 0 and the tracer's NetnsCookies are 0.
func netnsCookieSupported() bool {
	return features.HaveProgramHelper(cebpf.CGroupSKB, asm.FnGetNetnsCookie) == nil
}

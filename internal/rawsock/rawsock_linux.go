// Package rawsock is the few socket system calls kubeslow's epoll loops (the load generator's and the agent's
// HTTP server's) make per request, as raw system calls: on non-blocking sockets none of them blocks, so they
// skip the Go scheduler's hand-off that syscall.Syscall makes.
package rawsock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read reads into p (not empty); e is 0 on success (n == 0: end of stream), unix.EAGAIN when nothing is there.
func Read(fd int, p []byte) (n int, e unix.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}

// Send writes p (not empty) without raising SIGPIPE on a closed peer; n may be short.
func Send(fd int, p []byte) (n int, e unix.Errno) {
	r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), unix.MSG_NOSIGNAL, 0, 0)
	return int(r), e
}

// Close closes fd (which also takes it out of every epoll set).
func Close(fd int) {
	_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

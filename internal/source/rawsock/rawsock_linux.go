// Package rawsock is the few socket system calls kubeslow's epoll loops (the load generator's and the agent's
// HTTP server's) make per request, as raw system calls: on non-blocking sockets none of them blocks, so they
// skip the Go scheduler's hand-off that syscall.Syscall makes.
package rawsock

import (
	"runtime"
	"sync"
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

// Waiter waits on an epoll set for a goroutine locked to its own OS thread whose only work is that set (an
// event loop). While the loop is busy (the last wait returned events) it waits with a raw epoll_pwait, which
// keeps the thread's P: through syscall.Syscall, Go's sysmon takes the P back from every wait longer than
// 20 µs when no P is idle (one loop thread per core), waking every 20 µs to do it and handing the P back and
// forth — measured here at about as much CPU as the loop's own work per request. The runtime still gets the
// thread when it needs it: its preemption signal interrupts the wait (EINTR) within ~10 ms. Once a wait
// returns nothing (time-out or signal), the loop is idle and the next wait goes through the scheduler, so that
// an idle loop neither holds a P nor is woken by preemption signals.
type Waiter struct{ idle bool }

// Wait waits for events on ep for up to msec milliseconds (0: does not wait).
func (w *Waiter) Wait(ep int, events []unix.EpollEvent, msec int) (n int, e unix.Errno) {
	if w.idle && msec != 0 {
		n, err := unix.EpollWait(ep, events, msec)
		w.idle = n <= 0
		if err != nil {
			e, _ = err.(unix.Errno)
			if e == 0 {
				e = unix.EINVAL
			}
		}
		return n, e
	}
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	n = int(r)
	if e != 0 {
		n = 0
	}
	w.idle = n == 0 && msec != 0
	return n, e
}

// OnThreads runs run(i) for each i in [0, n) on its own goroutine locked to its own OS thread (an event loop
// each), and returns the function that waits for them all. A thread is not unlocked: it exits with its
// goroutine, and whatever thread state run set (a timer slack) with it.
func OnThreads(n int, run func(i int)) (wait func()) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			run(i)
		}()
	}
	return wg.Wait
}

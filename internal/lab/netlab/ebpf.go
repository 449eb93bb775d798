package netlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// EBPFRedirect joins client and server through a middle ("node") namespace where, instead of a bridge or
// routing, a tc ingress program on each veth redirects every packet straight into the other veth's peer
// (bpf_redirect_peer), as Cilium does between pods. The programs are assembled in Go (cilium/ebpf), no
// compiler needed.
func EBPFRedirect(ctx context.Context) (*Path, error) {
	c, s, n := NSPrefix+"bpf-c", NSPrefix+"bpf-s", NSPrefix+"bpf-node"
	p := &Path{Name: "tc-ebpf", Description: "veth pairs joined by tc-eBPF bpf_redirect_peer (Cilium-style)", ClientNS: c, ServerNS: s,
		ServerIP: "198.19.132.2", DialIP: "198.19.132.2", MTU: 1500, extra: []string{c, s, n}}
	if err := host.AddNetns(ctx, c, s, n); err != nil {
		return p, err
	}
	if err := host.Veth(ctx, n, "vc", "", c, "eth0", "198.19.132.1/24"); err != nil {
		return p, err
	}
	if err := host.Veth(ctx, n, "vs", "", s, "eth0", "198.19.132.2/24"); err != nil {
		return p, err
	}
	var links []link.Link
	p.cleanup = func() {
		for _, l := range links {
			l.Close()
		}
	}
	err := inNamespace(n, func() error {
		vc, err := net.InterfaceByName("vc")
		if err != nil {
			return err
		}
		vs, err := net.InterfaceByName("vs")
		if err != nil {
			return err
		}
		for _, pair := range [][2]int{{vc.Index, vs.Index}, {vs.Index, vc.Index}} {
			prog, err := redirectPeerProgram(pair[1])
			if err != nil {
				return err
			}
			l, err := link.AttachTCX(link.TCXOptions{Interface: pair[0], Program: prog, Attach: ebpf.AttachTCXIngress})
			prog.Close() // the link holds the program
			if err != nil {
				return fmt.Errorf("attaching tc ingress program: %w", err)
			}
			links = append(links, l)
		}
		return nil
	})
	return p, err
}

// redirectPeerProgram returns a SchedCLS program: return bpf_redirect_peer(ifindex, 0).
func redirectPeerProgram(ifindex int) (*ebpf.Program, error) {
	spec := &ebpf.ProgramSpec{
		Type: ebpf.SchedCLS, License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R1, int32(ifindex)),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRedirectPeer.Call(),
			asm.Return(),
		},
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		return nil, fmt.Errorf("loading the redirect program: %w", err)
	}
	return prog, nil
}

// inNamespace runs fn on a dedicated OS thread switched into the named network namespace. The thread is
// switched back afterwards; if that fails, it is never unlocked, so the runtime ends it with its goroutine
// instead of reusing a thread in the wrong namespace.
func inNamespace(ns string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open(host.NetnsPath(ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			done <- errors.Join(ferr, fmt.Errorf("restoring the thread's namespace: %w", err))
			return // still locked: the thread dies with this goroutine
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}

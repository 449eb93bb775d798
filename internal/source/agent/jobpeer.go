package agent

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// JobPeer is one member's start-up in a job whose members find each other by per-pod DNS name (case A's
// Indexed Job behind a headless Service): when it started, when it could resolve every peer's name and,
// with connecting on, when its back-off client had connected to every peer. Times are the member's clock.
type JobPeer struct {
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	// Names are the peers' names as the member polled them (every Interval until resolved).
	Names []DNSWait `json:"names"`
	// Resolved is when the last peer name first resolved (zero: not all did).
	Resolved time.Time `json:"resolved,omitzero"`
	// Connects are the back-off client's connections, one per peer (empty when not connecting).
	Connects []PeerConnect `json:"connects,omitempty"`
	// Connected is when the last peer connection succeeded (zero: not all did, or not connecting).
	Connected time.Time `json:"connected,omitzero"`
	// Accepted counts the connections the member's listener had accepted when it reported.
	Accepted int `json:"accepted"`
}

// PeerConnect is one peer as a client that resolves and connects, retrying with exponential back-off
// (zeromq's, MPI's and PyTorch rendezvous' shape), saw it.
type PeerConnect struct {
	Name         string    `json:"name"`
	FirstAttempt time.Time `json:"first_attempt"`
	Connected    time.Time `json:"connected,omitzero"`
	Attempts     int       `json:"attempts"`
	// NXDomain counts the attempts that failed because the name did not resolve.
	NXDomain  int    `json:"nxdomain"`
	LastError string `json:"last_error,omitempty"`
}

// JobPeerConfig is what a member does.
type JobPeerConfig struct {
	// Names are every member's per-pod DNS names; the member's own (first label = Host) is skipped.
	Names []string
	Host  string
	// Port is where every member listens and where the back-off client connects.
	Port int
	// Interval between name polls; Timeout bounds each lookup and each connect.
	Interval, Timeout time.Duration
	// Connect turns the back-off client on: it waits Base after its first failure, Factor times longer
	// after each further one, at most Cap.
	Connect       bool
	BackoffBase   time.Duration
	BackoffFactor float64
	BackoffCap    time.Duration
}

// Dial connects to addr (net.Dialer.DialContext, or a test double).
type Dial func(ctx context.Context, addr string) (net.Conn, error)

// Peers are the names of the other members (the one whose first label is host skipped).
func Peers(names []string, host string) []string {
	var out []string
	for _, n := range names {
		if first, _, _ := strings.Cut(n, "."); first == host {
			continue
		}
		out = append(out, n)
	}
	return out
}

// RunJobPeer is one member's start-up: it accepts peers on ln, polls every peer's name until each resolves
// and, with Connect, connects to every peer with back-off; it returns once those are done or ctx ends. The
// listener keeps accepting (and counting) until ctx ends, so that slower peers can still connect.
func RunJobPeer(ctx context.Context, c JobPeerConfig, ln net.Listener, lookup Lookup, dial Dial) JobPeer {
	out := JobPeer{Host: c.Host, Started: time.Now()}
	var accepted atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	peers := Peers(c.Names, c.Host)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		out.Names = WaitResolve(ctx, lookup, peers, c.Interval, c.Timeout, nil)
		out.Resolved = lastOf(len(out.Names), func(i int) time.Time { return out.Names[i].Resolved })
	}()
	if c.Connect {
		out.Connects = make([]PeerConnect, len(peers))
		for i, name := range peers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out.Connects[i] = connectBackoff(ctx, c, name, dial)
			}()
		}
	}
	wg.Wait()
	if c.Connect {
		out.Connected = lastOf(len(out.Connects), func(i int) time.Time { return out.Connects[i].Connected })
	}
	out.Accepted = int(accepted.Load())
	return out
}

// lastOf is the latest of n times, or zero if any is zero.
func lastOf(n int, at func(int) time.Time) time.Time {
	var last time.Time
	for i := range n {
		t := at(i)
		if t.IsZero() {
			return time.Time{}
		}
		if t.After(last) {
			last = t
		}
	}
	return last
}

// connectBackoff connects to name's port, waiting BackoffBase after the first failure and Factor times
// longer after each further one (at most BackoffCap), until it connects or ctx ends.
func connectBackoff(ctx context.Context, c JobPeerConfig, name string, dial Dial) PeerConnect {
	pc := PeerConnect{Name: name}
	addr := net.JoinHostPort(name, strconv.Itoa(c.Port))
	wait := c.BackoffBase
	for {
		now := time.Now()
		if pc.Attempts == 0 {
			pc.FirstAttempt = now
		}
		pc.Attempts++
		actx, cancel := context.WithTimeout(ctx, c.Timeout)
		conn, err := dial(actx, addr)
		cancel()
		if err == nil {
			pc.Connected, pc.LastError = time.Now(), ""
			conn.Close()
			return pc
		}
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound && !de.IsTimeout {
			pc.NXDomain++
		}
		pc.LastError = err.Error()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return pc
		case <-t.C:
		}
		wait = min(time.Duration(float64(wait)*c.BackoffFactor), c.BackoffCap)
	}
}

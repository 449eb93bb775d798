package ebpf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
)

// eventsBuffer is the capacity of the channels between the ring buffer and the consumer: a consumer slower
// than that leaves the rest in the ring buffer, and past that the kernel drops events.
const eventsBuffer = 1024

// ringTracer is what the tracers share: a loaded collection, the links that attach its programs, and the
// goroutine that reads the collection's ring buffer "events", decodes each record and sends it on out,
// until stop (or its context's end).
type ringTracer[T any] struct {
	coll  *cebpf.Collection
	links []link.Link
	rd    *ringbuf.Reader
	poll  time.Duration // > 0: read every poll also without a wake-up (records written with BPF_RB_NO_WAKEUP)
	out   chan T
	done  chan struct{} // closed by stop: the programs are detached and read drains what they wrote
	// abandon is closed drainMax after stop: a consumer that has not taken the drained records by then is
	// gone, and read stops sending them.
	abandon chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	bad     atomic.Uint64
	err     error // read's end, for close
}

// startRing loads spec (what names it in errors), opens its ring buffer "events", attaches its programs
// with attach (which returns the links it made, also on an error) and starts reading the records with
// decode: when woken, and every poll if poll > 0 (for programs that write without waking it). It stops
// when ctx ends or on stop.
func startRing[T any](ctx context.Context, spec *cebpf.CollectionSpec, what string, decode func([]byte) (T, error),
	poll time.Duration, attach func(*cebpf.Collection) ([]link.Link, error)) (*ringTracer[T], error) {
	if err := rlimit.RemoveMemlock(); err != nil { // a no-op from 5.11 (memory cgroup accounting)
		return nil, fmt.Errorf("raising RLIMIT_MEMLOCK for the BPF maps: %w", err)
	}
	coll, err := cebpf.NewCollection(spec)
	if err != nil {
		var ve *cebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("loading the %s: %+v", what, ve)
		}
		return nil, fmt.Errorf("loading the %s: %w", what, err)
	}
	t := &ringTracer[T]{coll: coll, poll: poll, out: make(chan T, eventsBuffer), done: make(chan struct{}),
		abandon: make(chan struct{})}
	t.rd, err = ringbuf.NewReader(coll.Maps["events"])
	if err != nil {
		coll.Close()
		return nil, fmt.Errorf("opening the ring buffer of the %s: %w", what, err)
	}
	t.links, err = attach(coll)
	if err != nil {
		for _, l := range t.links {
			l.Close()
		}
		t.rd.Close()
		coll.Close()
		return nil, err
	}
	t.wg.Add(2)
	go t.read(decode)
	go func() {
		defer t.wg.Done()
		select {
		case <-ctx.Done():
			t.stop()
		case <-t.done:
		}
	}()
	return t, nil
}

// close detaches the programs, frees the maps and closes out; it returns the error that ended the reading
// of the ring buffer before, if any. It is safe to call more than once.
func (t *ringTracer[T]) close() error {
	t.stop()
	t.wg.Wait()
	return t.err
}

// stop detaches the programs, so that nothing more is written, and has read drain the ring buffer: the
// records written since its last read (up to a poll's worth, 100 ms of DNS, with BPF_RB_NO_WAKEUP) are part of
// the watch that ends here (until 2026-11-29 the ring buffer was closed unread and a DNS watch lost its last
// ~100 ms: ~2 of a pod's lookups in 6 s, the lower edge of TestIntegrationNodeDNS's count).
func (t *ringTracer[T]) stop() {
	t.once.Do(func() {
		close(t.done)
		for _, l := range t.links {
			l.Close()
		}
		if err := t.rd.Flush(); err != nil {
			t.rd.Close() // no drain: unblock read at once
		}
		time.AfterFunc(drainMax, func() { close(t.abandon) })
	})
}

// drainMax bounds how long stop's drain waits for the consumer to take the records left in the ring buffer.
const drainMax = time.Second

func (t *ringTracer[T]) read(decode func([]byte) (T, error)) {
	defer t.wg.Done()
	defer t.coll.Close()
	defer t.rd.Close()
	defer close(t.out)
	var rec ringbuf.Record
	if t.poll > 0 {
		t.rd.SetDeadline(time.Now().Add(t.poll))
	}
	for {
		if err := t.rd.ReadInto(&rec); err != nil {
			if t.poll > 0 && errors.Is(err, os.ErrDeadlineExceeded) { // all read: the next poll
				t.rd.SetDeadline(time.Now().Add(t.poll))
				continue
			}
			if errors.Is(err, ringbuf.ErrFlushed) { // stop's drain: all read
				return
			}
			select {
			case <-t.done:
				return
			default:
			}
			if !errors.Is(err, ringbuf.ErrClosed) && !errors.Is(err, os.ErrClosed) {
				t.err = fmt.Errorf("reading the ring buffer: %w", err)
			}
			return
		}
		ev, err := decode(rec.RawSample)
		if err != nil {
			t.bad.Add(1)
			continue
		}
		select {
		case t.out <- ev:
		case <-t.abandon:
			return
		}
	}
}

// ConnectTracer times every TCP connect on the host (all network namespaces) from the tracepoint
// sock/inet_sock_set_state, until Close or its context ends.
type ConnectTracer struct {
	r *ringTracer[ConnectEvent]
}

// StartConnects loads and attaches the connect tracer. It needs what Supported checks (and returns its
// error when it is not nil). The tracer stops when ctx ends or on Close.
func StartConnects(ctx context.Context) (*ConnectTracer, error) {
	l, err := supported()
	if err != nil {
		return nil, err
	}
	r, err := startRing(ctx, collectionSpec(l), "connect program", decodeEvent, 0, func(coll *cebpf.Collection) ([]link.Link, error) {
		tp, err := link.Tracepoint(tpGroup, tpName, coll.Programs["connects"], nil)
		if err != nil {
			return nil, fmt.Errorf("attaching to the tracepoint %s/%s: %w", tpGroup, tpName, err)
		}
		return []link.Link{tp}, nil
	})
	if err != nil {
		return nil, err
	}
	return &ConnectTracer{r: r}, nil
}

// Events delivers the connects, in the order they ended; it is closed after Close (or the context's end).
// The consumer must keep up: while it does not, events wait in the ring buffer, and the kernel drops those
// that do not fit.
func (t *ConnectTracer) Events() <-chan ConnectEvent { return t.r.out }

// Undecodable is how many ring buffer records could not be decoded (none, unless the program and
// decodeEvent disagree).
func (t *ConnectTracer) Undecodable() uint64 { return t.r.bad.Load() }

// Close detaches the program, frees its maps and closes Events. It returns the error that ended the reading
// of the ring buffer before Close, if any. It is safe to call more than once.
func (t *ConnectTracer) Close() error { return t.r.close() }

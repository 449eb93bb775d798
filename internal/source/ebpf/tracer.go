package ebpf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
)

// ConnectTracer times every TCP connect on the host (all network namespaces) from the tracepoint
// sock/inet_sock_set_state, until Close or its context ends.
type ConnectTracer struct {
	coll   *cebpf.Collection
	tp     link.Link
	rd     *ringbuf.Reader
	events chan ConnectEvent
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	bad    atomic.Uint64
	err    error // read's end, for Close
}

// eventsBuffer is the Events channel's capacity: a consumer slower than that leaves the rest in the ring
// buffer (ringSize), and past that the kernel drops events.
const eventsBuffer = 1024

// StartConnects loads and attaches the connect tracer. It needs what Supported checks (and returns its
// error when it is not nil). The tracer stops when ctx ends or on Close.
func StartConnects(ctx context.Context) (*ConnectTracer, error) {
	l, err := supported()
	if err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil { // a no-op from 5.11 (memory cgroup accounting)
		return nil, fmt.Errorf("raising RLIMIT_MEMLOCK for the BPF maps: %w", err)
	}
	coll, err := cebpf.NewCollection(collectionSpec(l))
	if err != nil {
		var ve *cebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("loading the connect program: %+v", ve)
		}
		return nil, fmt.Errorf("loading the connect program: %w", err)
	}
	t := &ConnectTracer{coll: coll, events: make(chan ConnectEvent, eventsBuffer), done: make(chan struct{})}
	t.rd, err = ringbuf.NewReader(coll.Maps["events"])
	if err != nil {
		coll.Close()
		return nil, fmt.Errorf("opening the ring buffer: %w", err)
	}
	t.tp, err = link.Tracepoint(tpGroup, tpName, coll.Programs["connects"], nil)
	if err != nil {
		t.rd.Close()
		coll.Close()
		return nil, fmt.Errorf("attaching to the tracepoint %s/%s: %w", tpGroup, tpName, err)
	}
	t.wg.Add(2)
	go t.read()
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

// Events delivers the connects, in the order they ended; it is closed after Close (or the context's end).
// The consumer must keep up: while it does not, events wait in the ring buffer, and the kernel drops those
// that do not fit.
func (t *ConnectTracer) Events() <-chan ConnectEvent { return t.events }

// Undecodable is how many ring buffer records could not be decoded (none, unless the program and
// decodeEvent disagree).
func (t *ConnectTracer) Undecodable() uint64 { return t.bad.Load() }

// Close detaches the program, frees its maps and closes Events. It returns the error that ended the reading
// of the ring buffer before Close, if any. It is safe to call more than once.
func (t *ConnectTracer) Close() error {
	t.stop()
	t.wg.Wait()
	return t.err
}

func (t *ConnectTracer) stop() {
	t.once.Do(func() {
		close(t.done)
		t.tp.Close()
		t.rd.Close() // unblocks read
	})
}

func (t *ConnectTracer) read() {
	defer t.wg.Done()
	defer t.coll.Close()
	defer close(t.events)
	var rec ringbuf.Record
	for {
		if err := t.rd.ReadInto(&rec); err != nil {
			select {
			case <-t.done:
				return
			default:
			}
			if !errors.Is(err, ringbuf.ErrClosed) {
				t.err = fmt.Errorf("reading the ring buffer: %w", err)
			}
			return
		}
		ev, err := decodeEvent(rec.RawSample)
		if err != nil {
			t.bad.Add(1)
			continue
		}
		select {
		case t.events <- ev:
		case <-t.done:
			return
		}
	}
}

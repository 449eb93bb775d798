package agent

import (
	"context"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/ebpf"
)

// ConnectReport is the node's TCP connects over the agent's watch, timed by the eBPF connect tracer (the
// sock:inet_sock_set_state tracepoint: every socket of the kernel, whatever its network namespace) from
// connect(2) putting the socket in SYN_SENT to ESTABLISHED, as the application waits for it: per source
// address and destination. docs/ebpf.md has what is traced and its limits.
type ConnectReport struct {
	// WindowSeconds is how long the tracer watched (the agent's whole read, its --window included).
	WindowSeconds float64         `json:"window_seconds"`
	Clients       []ConnectClient `json:"clients"`
	// Undecodable counts the tracer's records that could not be read (ebpf.ConnectTracer's).
	Undecodable uint64 `json:"undecodable,omitempty"`
	// SharedKernel and Elsewhere are as DNSReport's: the other nodes on this node's kernel, and the clients of
	// theirs dropped from Clients. Filled in by the measurement.
	SharedKernel []string `json:"shared_kernel,omitempty"`
	Elsewhere    int      `json:"elsewhere,omitempty"`
}

// ConnectClient is one source address's connects to one destination over the watch (ebpf.Stats by client).
type ConnectClient struct {
	// Client is the connects' source address (a pod's IP, or the node's for host-network processes); Dest the
	// address and port connected to as the socket saw it (a Service's IP is DNATed before the SYN leaves, so
	// the socket's destination is the one the application asked for).
	Client string `json:"client"`
	Dest   string `json:"dest"`
	// Connects ended in the watch (established or failed: refused, timed out, or closed while connecting).
	Connects int64 `json:"connects"`
	Failures int64 `json:"failures"`
	// Slow counts the established connects that took ebpf.SlowConnect (the SYN's initial RTO, 1 s) or longer.
	Slow      int64   `json:"slow,omitempty"`
	PerSecond float64 `json:"per_second"`
	// P50, P99 and Max are the established connects' latencies (seconds; 0 when none was).
	P50 float64 `json:"p50_seconds"`
	P99 float64 `json:"p99_seconds"`
	Max float64 `json:"max_seconds"`
	// Namespace, Pod and Kind name the client as DNSClient's do: filled in by the measurement.
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Kind      string `json:"kind,omitempty"`
}

// ConnectsUnread names the Unread entry of a connect watch that could not run.
const ConnectsUnread = "TCP connects (eBPF)"

// connectWatch is the connect tracer running over the agent's read.
type connectWatch struct {
	t     *ebpf.ConnectTracer
	agg   *ebpf.Aggregator
	start time.Time
	done  chan struct{}
}

// startConnectWatch attaches the connect tracer and counts connects until stop; the error says why it cannot.
func startConnectWatch(ctx context.Context) (*connectWatch, error) {
	t, err := ebpf.StartConnects(ctx)
	if err != nil {
		return nil, err
	}
	w := &connectWatch{t: t, start: time.Now(), done: make(chan struct{})}
	w.agg = ebpf.NewClientAggregator(w.start)
	go func() {
		defer close(w.done)
		for ev := range w.t.Events() {
			w.agg.Add(ev)
		}
	}()
	return w, nil
}

// stop detaches the tracer and reports the watch.
func (w *connectWatch) stop() (*ConnectReport, error) {
	end := time.Now()
	err := w.t.Close()
	<-w.done
	rep := NewConnectReport(w.agg.Snapshot(end), end.Sub(w.start))
	rep.Undecodable = w.t.Undecodable()
	return rep, err
}

// NewConnectReport is the report of stats (by client and destination) over window.
func NewConnectReport(stats []ebpf.Stats, window time.Duration) *ConnectReport {
	rep := &ConnectReport{WindowSeconds: window.Seconds(), Clients: []ConnectClient{}}
	for _, s := range stats {
		rep.Clients = append(rep.Clients, ConnectClient{Client: s.Client.String(), Dest: s.Dest.String(), Connects: s.Connects,
			Failures: s.Failures, Slow: s.Slow, PerSecond: s.PerSecond, P50: s.P50.Seconds(), P99: s.P99.Seconds(), Max: s.Max.Seconds()})
	}
	return rep
}

// Package dnsload is an open-loop DNS query generator over UDP (issue 17 part 2): queries leave on a fixed
// schedule whatever the answers do, and each answer's latency is measured from the query's intended send time,
// so a server that stalls is charged for every query that should have left meanwhile (no coordinated
// omission). Queries are built with github.com/miekg/dns (the library CoreDNS itself uses); answers are
// matched by socket and message id. Latency goes to an HdrHistogram like internal/load/loadgen's.
package dnsload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/miekg/dns"
)

// Kind is what a name stands for in the mix.
type Kind string

// The name kinds of a mix.
const (
	KindService  Kind = "service"  // a Service's cluster name (ClusterIP)
	KindHeadless Kind = "headless" // a headless Service's per-pod name
	KindNX       Kind = "nxdomain" // a name that does not exist
	KindExternal Kind = "external" // a name outside the cluster, forwarded upstream
)

// Query is one name of the mix.
type Query struct {
	Name string
	Type uint16
	Kind Kind
}

// Limits bound every run.
const (
	MaxRate     = 50000
	MaxDuration = 2 * time.Minute
	histMax     = int64(60e6) // µs
)

// socketBuffer is the receive buffer every UDP socket of the package asks for (capped by rmem_max): the kernel's
// default (rmem_default, ~208 KiB: ~270 small datagrams) overflows when the process is not scheduled for ~0.2 s
// at 1,500 queries/s, and lost datagrams would be counted as the server's (or the upstream's) timeouts.
const socketBuffer = 4 << 20

// Config is one fixed-rate run against one server.
type Config struct {
	// Server is host:port.
	Server string
	Names  []Query
	// Rate is queries per second; Duration how long they are sent.
	Rate     float64
	Duration time.Duration
	// Timeout is how long an answer is waited for (default 2 s); later ones are timeouts.
	Timeout time.Duration
	// Sockets is the number of UDP sockets (source ports) the queries are spread over (default 4).
	Sockets int
}

// Validate checks the bounds.
func (c *Config) Validate() error {
	switch {
	case c.Server == "":
		return errors.New("no server")
	case len(c.Names) == 0:
		return errors.New("no names")
	case c.Rate <= 0 || c.Rate > MaxRate:
		return fmt.Errorf("rate %g outside (0, %d]", c.Rate, MaxRate)
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return fmt.Errorf("duration %s outside (0, %s]", c.Duration, MaxDuration)
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Second
	}
	if c.Sockets <= 0 {
		c.Sockets = 4
	}
	// Ids are per socket: the queries in flight on one socket must stay under 65,536.
	if c.Rate*c.Timeout.Seconds()/float64(c.Sockets) > 60000 {
		return fmt.Errorf("rate %g with a %s time-out needs more than %d sockets", c.Rate, c.Timeout, c.Sockets)
	}
	return nil
}

// Counts are a run's outcomes.
type Counts struct {
	Sent, Answered, Timeouts, NoError, NXDomain, ServFail, Refused, OtherRcode, SendErrors int64
}

func (c *Counts) add(o Counts) {
	c.Sent += o.Sent
	c.Answered += o.Answered
	c.Timeouts += o.Timeouts
	c.NoError += o.NoError
	c.NXDomain += o.NXDomain
	c.ServFail += o.ServFail
	c.Refused += o.Refused
	c.OtherRcode += o.OtherRcode
	c.SendErrors += o.SendErrors
}

// Result is what one run measured.
type Result struct {
	Server  string
	Rate    float64
	Elapsed time.Duration
	Planned int64
	Counts  Counts
	ByKind  map[Kind]*Counts
	// Latency of answered queries in µs from their intended send time; SchedLate how late each query
	// actually left (µs): the generator's own timing.
	Latency, SchedLate *hdrhistogram.Histogram
}

// AnsweredPerSecond is the achieved rate of answers.
func (r *Result) AnsweredPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Counts.Answered) / r.Elapsed.Seconds()
}

// FailedShare is the share of sent queries that timed out or were answered SERVFAIL/REFUSED.
func (r *Result) FailedShare() float64 {
	if r.Counts.Sent == 0 {
		return 0
	}
	return float64(r.Counts.Timeouts+r.Counts.ServFail+r.Counts.Refused+r.Counts.SendErrors) / float64(r.Counts.Sent)
}

// P is the latency quantile q (0-1) in seconds, 0 without answers.
func (r *Result) P(q float64) float64 {
	if r.Latency.TotalCount() == 0 {
		return 0
	}
	return float64(r.Latency.ValueAtQuantile(q*100)) / 1e6
}

type pending struct {
	at   int64 // intended send, ns since base; 0 = free
	kind int
}

type sock struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	slots   [65536]pending
	nextID  uint16
	hist    *hdrhistogram.Histogram
	counts  Counts
	byKind  []Counts
	pending int
}

// Run sends cfg.Rate queries per second for cfg.Duration and waits up to cfg.Timeout for the last answers.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	raddr, err := net.ResolveUDPAddr("udp", cfg.Server)
	if err != nil {
		return nil, err
	}
	// Pre-packed queries; the id (first two bytes) is patched per send.
	packed := make([][]byte, len(cfg.Names))
	kinds := map[Kind]int{}
	kindOf := make([]int, len(cfg.Names))
	var kindNames []Kind
	for i, q := range cfg.Names {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(q.Name), q.Type)
		m.RecursionDesired = true
		if packed[i], err = m.Pack(); err != nil {
			return nil, fmt.Errorf("packing %s: %w", q.Name, err)
		}
		k, ok := kinds[q.Kind]
		if !ok {
			k = len(kindNames)
			kinds[q.Kind] = k
			kindNames = append(kindNames, q.Kind)
		}
		kindOf[i] = k
	}
	socks := make([]*sock, cfg.Sockets)
	for i := range socks {
		c, err := net.DialUDP("udp", nil, raddr)
		if err != nil {
			for _, s := range socks[:i] {
				s.conn.Close()
			}
			return nil, err
		}
		_ = c.SetReadBuffer(socketBuffer)
		socks[i] = &sock{conn: c, hist: hdrhistogram.New(1, histMax, 3), byKind: make([]Counts, len(kindNames))}
	}
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	timeout := int64(cfg.Timeout)
	var wg sync.WaitGroup
	for _, s := range socks {
		wg.Add(1)
		go func() { defer wg.Done(); s.receive(now) }()
	}
	// The sweeper turns queries older than the time-out into timeouts.
	sweepDone := make(chan struct{})
	sweep := func(all bool) {
		t := now()
		for _, s := range socks {
			s.mu.Lock()
			if s.pending > 0 {
				for id := range s.slots {
					p := &s.slots[id]
					if p.at != 0 && (all || t-p.at > timeout) {
						s.counts.Timeouts++
						s.byKind[p.kind].Timeouts++
						p.at = 0
						s.pending--
					}
				}
			}
			s.mu.Unlock()
		}
	}
	go func() {
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-sweepDone:
				return
			case <-tk.C:
				sweep(false)
			}
		}
	}()
	late := hdrhistogram.New(1, histMax, 3)
	interval := float64(time.Second) / cfg.Rate
	planned := int64(cfg.Duration.Seconds() * cfg.Rate)
	var i int64
	buf := make([]byte, 512)
send:
	for i < planned {
		due := int64(float64(i) * interval)
		if d := due - now(); d > 0 {
			select {
			case <-ctx.Done():
				break send
			case <-time.After(time.Duration(d)):
			}
		}
		// Send everything that is due (a late wake-up sends the backlog at once, each query keeping its own
		// intended time).
		for t := now(); i < planned && int64(float64(i)*interval) <= t; i++ {
			intended := int64(float64(i) * interval)
			q := int(i % int64(len(packed)))
			s := socks[i%int64(len(socks))]
			s.mu.Lock()
			id := s.nextID
			for n := 0; s.slots[id].at != 0 && n < 65536; n++ {
				id++
			}
			s.nextID = id + 1
			s.slots[id] = pending{at: max(intended, 1), kind: kindOf[q]}
			s.pending++
			s.counts.Sent++
			s.byKind[kindOf[q]].Sent++
			s.mu.Unlock()
			b := append(buf[:0], packed[q]...)
			b[0], b[1] = byte(id>>8), byte(id)
			_ = late.RecordValue(max(1, min((t-intended)/1000, histMax)))
			if _, err := s.conn.Write(b); err != nil {
				s.mu.Lock()
				if s.slots[id].at != 0 {
					s.slots[id].at = 0
					s.pending--
					s.counts.SendErrors++
					s.byKind[kindOf[q]].SendErrors++
				}
				s.mu.Unlock()
			}
		}
	}
	elapsed := time.Duration(now())
	// Wait for the last answers, then count what is left as timeouts.
	deadline := time.Now().Add(cfg.Timeout)
	for time.Now().Before(deadline) {
		left := 0
		for _, s := range socks {
			s.mu.Lock()
			left += s.pending
			s.mu.Unlock()
		}
		if left == 0 || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(sweepDone)
	sweep(true)
	for _, s := range socks {
		s.conn.Close()
	}
	wg.Wait()
	res := &Result{Server: cfg.Server, Rate: cfg.Rate, Elapsed: elapsed, Planned: planned, ByKind: map[Kind]*Counts{},
		Latency: hdrhistogram.New(1, histMax, 3), SchedLate: late}
	for _, s := range socks {
		res.Counts.add(s.counts)
		res.Latency.Merge(s.hist)
		for k, c := range s.byKind {
			if res.ByKind[kindNames[k]] == nil {
				res.ByKind[kindNames[k]] = &Counts{}
			}
			res.ByKind[kindNames[k]].add(c)
		}
	}
	return res, ctx.Err()
}

// receive reads answers until the socket is closed: the id finds the query, the header's rcode is counted.
func (s *sock) receive(now func() int64) {
	b := make([]byte, 4096)
	for {
		n, err := s.conn.Read(b)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && !ne.Timeout() && !errors.Is(err, net.ErrClosed) {
				continue // e.g. ICMP port unreachable: the query will time out
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n < 12 || b[2]&0x80 == 0 { // too short, or not a response
			continue
		}
		t := now()
		id := uint16(b[0])<<8 | uint16(b[1])
		rcode := int(b[3] & 0x0f)
		s.mu.Lock()
		p := s.slots[id]
		if p.at == 0 {
			s.mu.Unlock()
			continue // late (already a timeout) or unknown
		}
		s.slots[id].at = 0
		s.pending--
		c, k := &s.counts, &s.byKind[p.kind]
		for _, x := range []*Counts{c, k} {
			x.Answered++
			switch rcode {
			case dns.RcodeSuccess:
				x.NoError++
			case dns.RcodeNameError:
				x.NXDomain++
			case dns.RcodeServerFailure:
				x.ServFail++
			case dns.RcodeRefused:
				x.Refused++
			default:
				x.OtherRcode++
			}
		}
		_ = s.hist.RecordValue(max(1, min((t-p.at)/1000, histMax)))
		s.mu.Unlock()
	}
}

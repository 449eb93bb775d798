package netlab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/hostfs"
	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// BenchName is the result of `kubeslow lab net`.
const BenchName = "lab.net"

// BenchOptions configure the same HTTP benchmark through every path.
type BenchOptions struct {
	// Binary is the kubeslow binary: the server (`agent serve`) and the client (`bench http`) run as
	// processes inside the path's namespaces.
	Binary string
	// Paths to build (names as in Builders); empty: all.
	Paths []string
	// Services are the NAT service counts.
	Services []int
	Duration time.Duration
	Repeats  int
	// Concurrency of the closed-loop client.
	Concurrency int
	Progress    func(format string, args ...any)
}

const benchPort = 18080

// Builder builds one named path.
type Builder struct {
	Name  string
	Build func(context.Context) (*Path, error)
}

// Builders lists the paths for the given NAT service counts, in the order they run.
func Builders(services []int) []Builder {
	bs := []Builder{{"loopback", Loopback}, {"veth", Veth}, {"bridge", Bridge}, {"vxlan", VXLAN}, {"tc-ebpf", EBPFRedirect}}
	for _, be := range []Backend{IPTablesLegacy, IPTablesNFT, NFTablesMap} {
		for _, n := range services {
			bs = append(bs, Builder{fmt.Sprintf("nat-%s-%d", be, n), func(ctx context.Context) (*Path, error) { return NAT(ctx, be, n, benchPort) }})
		}
	}
	return bs
}

// cpuBusy samples /proc/stat over d and returns the fraction of CPU time not idle.
func cpuBusy(ctx context.Context, d time.Duration) (float64, error) {
	read := hostfs.Host().CPUTimes
	i0, t0, err := read()
	if err != nil {
		return 0, err
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	i1, t1, err := read()
	if err != nil || t1 <= t0 {
		return 0, err
	}
	return 1 - (i1-i0)/(t1-t0), nil
}

// pin returns the taskset prefix for cpu when the machine has at least two: the server and the client
// each get their own core.
func pin(cpu int) []string {
	if runtime.NumCPU() < 2 {
		return nil
	}
	return []string{"taskset", "-c", strconv.Itoa(cpu)}
}

// startServer runs `kubeslow agent serve` in the path's server namespace; stop kills it by PID.
func startServer(ctx context.Context, bin string, p *Path) (stop func(), err error) {
	serve := agentproto.Serve{Listen: fmt.Sprintf("%s:%d", p.ServerIP, benchPort), TCPListen: fmt.Sprintf("%s:%d", p.ServerIP, benchPort+1)}
	argv := host.InNetns(p.ServerNS, append(append(pin(0), bin), serve.Args()...)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	// "listening-tcp …" then "listening …" once both servers are up.
	br := bufio.NewReader(stdout)
	line, err := br.ReadString('\n')
	if err == nil && strings.HasPrefix(line, "listening-tcp ") {
		line, err = br.ReadString('\n')
	}
	if err != nil || !strings.HasPrefix(line, "listening ") {
		stop()
		return nil, fmt.Errorf("server in %s did not start: %q %v %s", p.ServerNS, line, err, stderr.String())
	}
	return stop, nil
}

type sample struct{ rps, p99 float64 }

// runJSON runs a kubeslow command in the client namespace (pinned to CPU 1) and returns its one result.
func runJSON(ctx context.Context, o BenchOptions, p *Path, timeout time.Duration, args ...string) (*result.Result, error) {
	full := host.InNetns(p.ClientNS, append(append(pin(1), o.Binary), append(args, "-o", "json")...)...)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(cctx, full[0], full[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s in %s: %v: %s", args[1], p.ClientNS, err, strings.TrimSpace(stderr.String()))
	}
	rep, err := result.Decode(&stdout)
	if err != nil || len(rep.Results) != 1 {
		return nil, fmt.Errorf("%s report: %v", args[1], err)
	}
	return &rep.Results[0], nil
}

// runClient runs one `kubeslow bench http` in the client namespace.
func runClient(ctx context.Context, o BenchOptions, p *Path, newConn bool) (sample, error) {
	port := benchPort
	if p.Rules > 0 {
		port = ServicePort(p.Rules)
	}
	args := []string{"bench", "http", fmt.Sprintf("http://%s:%d/", p.DialIP, port), "-c", strconv.Itoa(o.Concurrency), "-d", o.Duration.String()}
	if newConn {
		args = append(args, "--new-conn")
	}
	r, err := runJSON(ctx, o, p, o.Duration+time.Minute, args...)
	if err != nil {
		return sample{}, err
	}
	var s sample
	for _, m := range r.Metrics {
		switch m.Name {
		case "requests_per_second":
			s.rps = m.Value
		case "latency_p99":
			s.p99 = m.Value
		}
	}
	if s.rps == 0 {
		return s, fmt.Errorf("client completed no request: %s", r.Reason)
	}
	return s, nil
}

type tcpSample struct{ gbit, rrTPS, rrP99 float64 }

// runTCP runs `kubeslow bench tcp` (stream, then request/response) in the client namespace against the server
// directly (NAT paths translate only the HTTP port).
func runTCP(ctx context.Context, o BenchOptions, p *Path) (tcpSample, error) {
	r, err := runJSON(ctx, o, p, 2*o.Duration+time.Minute, "bench", "tcp", fmt.Sprintf("%s:%d", p.DialIP, benchPort+1), "-d", o.Duration.String())
	if err != nil {
		return tcpSample{}, err
	}
	var s tcpSample
	for _, m := range r.Metrics {
		switch m.Name {
		case "stream_gbit_per_second":
			s.gbit = m.Value
		case "rr_transactions_per_second":
			s.rrTPS = m.Value
		case "rr_latency_p99":
			s.rrP99 = m.Value
		}
	}
	return s, nil
}

// Bench runs the HTTP benchmark (closed loop, keep-alive and a new connection per request) and, on the paths
// without NAT, the TCP stream and request/response tests through every path, repeated, and reports medians
// with their spread (min, max), the median p99 latency and each path's ratio to loopback. A path that cannot be built is reported, not fatal; everything is torn down.
func Bench(ctx context.Context, o BenchOptions) (result.Result, error) {
	if o.Repeats < 1 || o.Repeats > 10 || o.Duration <= 0 || o.Duration > time.Minute || o.Concurrency < 1 {
		return result.Result{}, fmt.Errorf("bounds: repeats 1..10, duration (0, 1m], concurrency >= 1")
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	res := result.Result{Name: BenchName, Status: result.StatusPass, Start: time.Now()}
	add := func(name, unit string, v float64, l map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	busy, err := cpuBusy(ctx, time.Second)
	if err != nil {
		return res, err
	}
	add("machine_busy_before", "ratio", busy, nil)
	if busy > 0.25 {
		res.Status, res.Reason = result.StatusWarn, fmt.Sprintf("the machine was %.0f%% busy before the run: other load makes the ratios noisy", busy*100)
	}
	if err := Teardown(ctx); err != nil {
		return res, err
	}
	want := map[string]bool{}
	for _, p := range o.Paths {
		want[p] = true
	}
	base := map[bool]float64{}
	baseGbit := 0.0
	var notes []string
	if _, err := os.Stat("/proc/net/ip_vs"); err != nil {
		notes = append(notes, "ipvs: unavailable in this kernel (no /proc/net/ip_vs)")
	}
	for _, b := range Builders(o.Services) {
		if len(want) > 0 && !want[b.Name] {
			continue
		}
		progress("%s: building", b.Name)
		p, err := b.Build(ctx)
		if err != nil {
			if p != nil {
				_ = Destroy(context.Background(), p)
			}
			notes = append(notes, fmt.Sprintf("%s: not built: %v", b.Name, err))
			continue
		}
		stop, err := startServer(ctx, o.Binary, p)
		if err != nil {
			_ = Destroy(context.Background(), p)
			notes = append(notes, fmt.Sprintf("%s: %v", b.Name, err))
			continue
		}
		rec := result.Record{ID: b.Name, Labels: map[string]string{"description": p.Description}, Values: map[string]float64{"mtu": float64(p.MTU), "nat_rules": float64(p.Rules)}}
		for _, newConn := range []bool{false, true} {
			conn := "keepalive"
			if newConn {
				conn = "new"
			}
			var rps, p99 []float64
			for r := 0; r < o.Repeats; r++ {
				s, err := runClient(ctx, o, p, newConn)
				if err != nil {
					notes = append(notes, fmt.Sprintf("%s/%s: %v", b.Name, conn, err))
					break
				}
				rps, p99 = append(rps, s.rps), append(p99, s.p99)
			}
			if len(rps) == 0 {
				continue
			}
			l := map[string]string{"path": b.Name, "conn": conn}
			m, lo, hi := stats.Spread(rps)
			add("rps_median", "requests_per_second", m, l)
			add("rps_min", "requests_per_second", lo, l)
			add("rps_max", "requests_per_second", hi, l)
			add("latency_p99_median", "seconds", stats.Median(p99), l)
			if b.Name == "loopback" {
				base[newConn] = m
			}
			if base[newConn] > 0 {
				add("ratio_to_loopback", "ratio", m/base[newConn], l)
			}
			rec.Values["rps_median_"+conn] = m
			progress("%s %s: %.0f req/s (min %.0f, max %.0f), p99 %.2f ms", b.Name, conn, m, lo, hi, stats.Median(p99)*1e3)
		}
		if p.Rules == 0 {
			var gbit, tps, p99 []float64
			for r := 0; r < o.Repeats; r++ {
				s, err := runTCP(ctx, o, p)
				if err != nil {
					notes = append(notes, fmt.Sprintf("%s/tcp: %v", b.Name, err))
					break
				}
				gbit, tps, p99 = append(gbit, s.gbit), append(tps, s.rrTPS), append(p99, s.rrP99)
			}
			if len(gbit) > 0 {
				l := map[string]string{"path": b.Name}
				m, lo, hi := stats.Spread(gbit)
				add("stream_gbit_median", "gbit_per_second", m, l)
				add("stream_gbit_min", "gbit_per_second", lo, l)
				add("stream_gbit_max", "gbit_per_second", hi, l)
				add("rr_tps_median", "transactions_per_second", stats.Median(tps), l)
				add("rr_latency_p99_median", "seconds", stats.Median(p99), l)
				if b.Name == "loopback" {
					baseGbit = m
				}
				if baseGbit > 0 {
					add("stream_ratio_to_loopback", "ratio", m/baseGbit, l)
				}
				rec.Values["stream_gbit_median"] = m
				progress("%s tcp: stream %.1f Gbit/s (min %.1f, max %.1f), rr %.0f/s p99 %.0f µs", b.Name, m, lo, hi, stats.Median(tps), stats.Median(p99)*1e6)
			}
		}
		res.Records = append(res.Records, rec)
		stop()
		if err := Destroy(context.Background(), p); err != nil {
			notes = append(notes, fmt.Sprintf("%s: teardown: %v", b.Name, err))
		}
	}
	if left := Remaining(); len(left) > 0 {
		return res, fmt.Errorf("namespaces left after the run: %v", left)
	}
	if len(notes) > 0 {
		if res.Reason != "" {
			res.Reason += "; "
		}
		res.Reason += strings.Join(notes, "; ")
	}
	res.End = time.Now()
	return res, nil
}

package bench

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/bench/dnsbench"
	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/load/dnsload"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// DNSLoadName is the result of `kubeslow bench dns-load`.
const DNSLoadName = "dns.load"

func newDNSLoad(streams common.IOStreams) *cobra.Command {
	var out common.OutputFlag
	var cf common.ClusterFlags
	var image string
	var external []string
	var names []string
	var namesFile string
	var rc = dnsload.DefaultRamp(dnsload.Config{})
	var rate float64
	var d time.Duration
	cmd := &cobra.Command{
		Use:   "dns-load [SERVER[:PORT]...]",
		Short: "Open-loop UDP DNS load (latency from the intended send time, HdrHistogram) against each server, at a fixed --rate or ramping until p99 or failures break the threshold",
		Long: `Open-loop UDP DNS load from where kubeslow runs (on a node, or in a pod through exec) against each server:
a fixed --rate for --duration, or (without --rate) a ramp: --start q/s multiplied by --factor each --step, at
most --steps steps, ended by the first step whose p99 exceeds --p99-max, whose failed share (timeouts,
SERVFAIL, REFUSED) exceeds --fail-max, or that answers less than 90% of its rate.

Without SERVER it runs in the cluster (--lab, or --image with the kubeslow binary at /kubeslow): a client pod
per real node (at most 5) ramps (or holds --rate for --duration), one node at a time, against the kube-dns Service address and each DNS server
behind it (each CoreDNS pod IP), over a Service name, a headless per-pod name, an NXDOMAIN name and
--external names; per client node and target: achieved q/s, p50/p99, timeouts, SERVFAIL.

Names are KIND=NAME (kinds: service, headless, nxdomain, external), asked in turn, e.g.
  --name service=kubernetes.default.svc.cluster.local --name nxdomain=nope.default.svc.cluster.local
  --name external=a.ext.kubeslow.test`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.Validate(); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			if len(args) == 0 {
				if cmd.Flags().Changed("name") || cmd.Flags().Changed("names-file") {
					return &common.ExitError{Code: 2, Err: fmt.Errorf("--name and --names-file are for a SERVER given on the command line; in the cluster the names are the benchmark's own (a Service, a headless per-pod name, an NXDOMAIN name) and --external")}
				}
				if rate > 0 { // a fixed rate is a ramp of one step, bounded like any ramp
					rc.Start, rc.MaxSteps, rc.StepDuration = rate, 1, d
				}
				o := dnsbench.RampOptions(cf.AgentImage(image), rc, external)
				if o.Image == "" {
					return errNoImage
				}
				if err := rc.Validate(); err != nil {
					return &common.ExitError{Code: 2, Err: err}
				}
				return runBenchmark(cmd, streams, &cf, &out, dnsbench.New(o), nil)
			}
			var qs []dnsload.Query
			if namesFile != "" {
				b, err := os.ReadFile(namesFile)
				if err != nil {
					return &common.ExitError{Code: 2, Err: err}
				}
				names = nil
				for _, l := range strings.Split(string(b), "\n") {
					if f := strings.Fields(l); len(f) == 2 && !strings.HasPrefix(f[0], "#") {
						names = append(names, f[0]+"="+f[1])
					}
				}
			}
			for _, n := range names {
				k, name, ok := strings.Cut(n, "=")
				if !ok {
					return &common.ExitError{Code: 2, Err: fmt.Errorf("--name %q: want KIND=NAME", n)}
				}
				qs = append(qs, dnsload.Query{Name: name, Type: dns.TypeA, Kind: dnsload.Kind(k)})
			}
			ctx := common.Context(cmd)
			start := time.Now()
			r := result.Result{Name: DNSLoadName, Status: result.StatusPass, Start: start}
			for _, srv := range args {
				if !strings.Contains(srv, ":") {
					srv += ":53"
				}
				base := rc.Base
				base.Server, base.Names = srv, qs
				var steps []dnsload.Step
				if rate > 0 {
					res, err := dnsload.Run(ctx, dnsload.Config{Server: srv, Names: qs, Rate: rate, Duration: d, Timeout: base.Timeout})
					if err != nil {
						return &common.ExitError{Code: 2, Err: err}
					}
					steps = []dnsload.Step{{Result: res, Broke: rc.Breaks(res)}}
				} else {
					ramp := rc
					ramp.Base = base
					var err error
					if steps, err = dnsload.Ramp(ctx, ramp); err != nil {
						return &common.ExitError{Code: 2, Err: err}
					}
				}
				best := 0.0
				for _, s := range steps {
					streams.Progressf("%s at %.0f q/s: answered %.0f/s, p50 %.2f ms, p99 %.2f ms, %d timeouts, %d SERVFAIL %s", srv, s.Rate,
						s.AnsweredPerSecond(), s.P(0.5)*1e3, s.P(0.99)*1e3, s.Counts.Timeouts, s.Counts.ServFail, s.Broke)
					r.Metrics = append(r.Metrics, StepMetrics(s, map[string]string{"server": srv, "rate": fmt.Sprint(s.Rate)})...)
					if s.Broke == "" {
						best = max(best, s.AnsweredPerSecond())
					}
				}
				r.Metrics = append(r.Metrics, result.Metric{Name: "max_clean_qps", Unit: "requests_per_second", Value: best, Labels: map[string]string{"server": srv}})
			}
			r.End = time.Now()
			return common.Finish(streams, &out, runner.StandaloneReport("none", strings.Join(args, ","), start, r), nil, result.SeverityWarning)
		},
	}
	out.Add(cmd)
	cf.Add(cmd)
	f := cmd.Flags()
	f.StringVar(&image, "image", "", "in the cluster: agent image with /kubeslow (default on the lab: "+lab.AgentImage+")")
	f.StringArrayVar(&external, "external", nil, "in the cluster: an external name to mix in (repeatable)")
	f.StringArrayVar(&names, "name", []string{"service=kubernetes.default.svc.cluster.local", "nxdomain=nope.default.svc.cluster.local"}, "KIND=NAME to ask (repeatable)")
	f.StringVar(&namesFile, "names-file", "", "a file of KIND NAME lines (instead of --name)")
	f.Float64Var(&rate, "rate", 0, "a fixed rate (queries/s) instead of the ramp")
	f.DurationVar(&d, "duration", 5*time.Second, "length of the fixed-rate run")
	f.Float64Var(&rc.Start, "start", rc.Start, "the ramp's first rate (queries/s)")
	f.Float64Var(&rc.Factor, "factor", rc.Factor, "the ramp's rate multiplier per step")
	f.IntVar(&rc.MaxSteps, "steps", rc.MaxSteps, "the ramp's most steps (at most 12)")
	f.DurationVar(&rc.StepDuration, "step", rc.StepDuration, "each step's length (all steps at most 5 minutes)")
	f.DurationVar(&rc.P99Max, "p99-max", rc.P99Max, "a step whose answer p99 exceeds this ends the ramp")
	f.Float64Var(&rc.FailMax, "fail-max", rc.FailMax, "a step whose failed share (timeouts, SERVFAIL, REFUSED) exceeds this ends the ramp")
	f.DurationVar(&rc.Base.Timeout, "timeout", 2*time.Second, "how long an answer is waited for")
	return cmd
}

// StepMetrics are one step's figures as report metrics.
func StepMetrics(s dnsload.Step, labels map[string]string) []result.Metric {
	m := func(name, unit string, v float64) result.Metric {
		return result.Metric{Name: name, Unit: unit, Value: v, Labels: labels}
	}
	out := []result.Metric{
		m("achieved_qps", "requests_per_second", s.AnsweredPerSecond()),
		m("latency_p50", "seconds", s.P(0.5)),
		m("latency_p99", "seconds", s.P(0.99)),
		m("timeouts", "count", float64(s.Counts.Timeouts)),
		m("servfail", "count", float64(s.Counts.ServFail)),
		m("nxdomain", "count", float64(s.Counts.NXDomain)),
		m("sent", "count", float64(s.Counts.Sent)),
		m("send_late_p99", "seconds", float64(s.SchedLate.ValueAtQuantile(99))/1e6),
	}
	// Per name kind: the share of its queries that failed (timeouts, SERVFAIL, REFUSED), e.g. only the
	// external names when an upstream's limit drops them.
	kinds := make([]string, 0, len(s.ByKind))
	for k := range s.ByKind {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		c := s.ByKind[dnsload.Kind(k)]
		if c.Sent == 0 {
			continue
		}
		l := map[string]string{"kind": k}
		for n, v := range labels {
			l[n] = v
		}
		failed := c.Timeouts + c.ServFail + c.Refused + c.SendErrors
		out = append(out, result.Metric{Name: "kind_failed_share", Unit: "ratio", Value: float64(failed) / float64(c.Sent), Labels: l},
			result.Metric{Name: "kind_sent", Unit: "count", Value: float64(c.Sent), Labels: l})
	}
	return out
}

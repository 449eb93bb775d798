// Package watch is `kubeslow watch`: the read-only diagnosis of `kubeslow run`, every interval, served as
// Prometheus metrics, the latest HTML report and a JSON history (internal/watch holds the loop).
package watch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/watch"
	"github.com/kubeslow/kubeslow/pkg/result"
)

type flags struct {
	cluster    common.ClusterFlags
	interval   time.Duration
	listen     string
	hold       int
	window     time.Duration
	only       []string
	skip       []string
	etcd       string
	audit      []string
	maxSeries  int
	verbose    bool
	agentImage string
	nodeAgent  string
}

// NewCommand returns `kubeslow watch`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Run the read-only diagnosis every interval and serve it as Prometheus metrics",
		Long: `watch runs the read-only measurements of kubeslow run (nothing is created in the cluster) with their
rules every --interval, and serves on --listen:

  /metrics   Prometheus text: kubeslow_finding{id,severity,cause,namespace,pod,node} (1 while firing),
             kubeslow_measurement_status, kubeslow_metric, kubeslow_up, kubeslow_cycles_total, ...
  /          the latest report as HTML
  /history   the last cycles as JSON
  /healthz   liveness

A finding fires only after it held for --for consecutive cycles and clears after one clear cycle; a cycle
that cannot reach the cluster sets kubeslow_up to 0, fires nothing and is retried with back-off (capped at
the interval). A failed cycle never ends the command; Ctrl-C does. docs/watch.md has the series.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.watch(common.Context(cmd), streams); err != nil {
				return &common.ExitError{Code: runner.ExitCouldNotRun, Err: err}
			}
			return nil
		},
	}
	f.cluster.Add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9464", "address to serve /metrics, /, /history and /healthz on")
	fl.StringSliceVar(&f.audit, "audit-log", nil, "apiserver audit log files or directories, as for kubeslow run")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "debug logging on stderr")
	fl.StringVar(&f.nodeAgent, "node-agent", "", "namespace of a node agent kept running (`kubeslow watch install --node-agent`): each cycle reads its agents' newest reports "+
		"(nodes.agent: kernel log, conntrack, PSI, disks, every pod's DNS queries and TCP connects), creating nothing")
	f.addCycleFlags(cmd)
	cmd.AddCommand(newInstall(streams), newUninstall(streams))
	return cmd
}

// addCycleFlags registers the flags that shape a cycle (install passes them on to the in-cluster watch).
func (f *flags) addCycleFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVar(&f.interval, "interval", watch.DefaultInterval, "time between the end of one cycle and the start of the next")
	fl.IntVar(&f.hold, "for", watch.DefaultFor, "consecutive cycles a finding must hold before it fires")
	fl.DurationVar(&f.window, "window", 20*time.Second, "observation window of the metric-based measurements in each cycle (below --interval)")
	fl.StringSliceVar(&f.only, "only", nil, "run only these measurements (names or prefixes ending in '.')")
	fl.StringSliceVar(&f.skip, "skip", nil, "skip these measurements (names or prefixes ending in '.')")
	fl.StringVar(&f.etcd, "etcd-endpoint", "", "etcd metrics endpoint (plain http), as for kubeslow run")
	fl.IntVar(&f.maxSeries, "max-series", watch.DefaultMaxSeries, "most kubeslow_metric series exported from one cycle (the rest are counted in kubeslow_metric_series_dropped)")
	fl.StringVar(&f.agentImage, "agent-image", "", "image with the kubeslow binary at /kubeslow, for the measurements that run it in pods (the read-only ones run none today; default as for kubeslow run)")
}

func (f *flags) validate() error {
	switch {
	case f.interval < 10*time.Second:
		return fmt.Errorf("--interval %s: at least 10s", f.interval)
	case f.hold < 1:
		return fmt.Errorf("--for %d: at least 1", f.hold)
	case f.window <= 0 || f.window >= f.interval:
		return fmt.Errorf("--window %s: above 0 and below --interval %s", f.window, f.interval)
	case f.maxSeries < 1:
		return fmt.Errorf("--max-series %d: at least 1", f.maxSeries)
	}
	return nil
}

func (f *flags) watch(ctx context.Context, streams common.IOStreams) error {
	if err := f.validate(); err != nil {
		return err
	}
	t, err := f.cluster.Target()
	if err != nil {
		return err
	}
	ao := catalogue.Options{Window: f.window, EtcdEndpoint: f.etcd, AuditLogs: f.audit, Image: f.cluster.AgentImage(f.agentImage), NodeAgent: f.nodeAgent}
	// The selection is checked once here; each cycle builds fresh measurements (they keep state within a run).
	if _, err := f.readOnly(ao); err != nil {
		return err
	}
	log := streams.Logger(f.verbose)
	cycle := func(ctx context.Context) (*result.Report, error) {
		ms, err := f.readOnly(ao)
		if err != nil {
			return nil, err
		}
		return runner.Execute(ctx, runner.Plan{Target: t, Measurements: ms, Rules: check.Rules(), Log: log,
			NodeTierOff: "kubeslow watch runs the read-only checks: it deploys no agent on the control-plane nodes"})
	}
	w, err := watch.New(watch.Options{Cycle: cycle, Interval: f.interval, For: f.hold, MaxSeries: f.maxSeries, Log: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		stop() // a server that stopped serving ends the watch
		served <- err
	}()
	streams.Progressf("watching every %s (a finding fires after %d cycles); serving http://%s/metrics, /, /history", f.interval, f.hold, ln.Addr())
	runErr := w.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	streams.Progressf("watch stopped")
	return runErr
}

// readOnly is the cycle's selection: the registry's read-only measurements, narrowed by --only and --skip.
func (f *flags) readOnly(ao catalogue.Options) ([]measure.Measurement, error) {
	ms, err := catalogue.Registry(ao).Select(f.only, f.skip)
	if err != nil {
		return nil, err
	}
	ms = measure.ReadOnlyOf(ms)
	if len(ms) == 0 {
		return nil, fmt.Errorf("no read-only measurement selected (--only %v --skip %v)", f.only, f.skip)
	}
	return ms, nil
}

package run

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/measure/promwindow"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/source/promql"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// promFlags select a past window of a Prometheus-compatible server instead of the live cluster.
type promFlags struct {
	opts     promql.Options
	from, to string
	last     time.Duration
	step     time.Duration
	jobs     []string
	cpCores  float64
	cgroups  []string
}

func (p *promFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&p.opts.URL, "prometheus", "", "diagnose a past window from this Prometheus-compatible server (Prometheus, Thanos, Mimir, VictoriaMetrics) instead of the live cluster; see docs/prometheus.md")
	fl.StringVar(&p.from, "from", "", "start of the window (RFC 3339, Unix seconds, now-<duration>); with --prometheus")
	fl.StringVar(&p.to, "to", "", "end of the window (same forms; default now); with --prometheus")
	fl.DurationVar(&p.last, "last", 0, "the window is the last DURATION (e.g. 1h), instead of --from/--to")
	fl.DurationVar(&p.step, "prometheus-step", 0, "resolution of the time profiles (default: the window / 120, at least 5s)")
	fl.StringSliceVar(&p.jobs, "prometheus-job", nil, "ROLE=JOB: the job label of a role instead of discovering it (roles: apiserver, etcd, scheduler, controller-manager, kubelet, cadvisor, node-exporter, coredns)")
	fl.Float64Var(&p.cpCores, "prometheus-control-plane-cores", 0, "the cores kube-apiserver and etcd may use together, when no series says (default: cAdvisor's CPU quota of their containers, else node_exporter's CPU count on their hosts)")
	fl.StringArrayVar(&p.cgroups, "prometheus-control-plane-cgroup", nil, "cAdvisor's label matchers of the control plane's cgroup, repeatable (default: namespace=\"kube-system\",container=~\"kube-apiserver|etcd\", kubeadm's static pods; e.g. id=\"/system.slice/k3s.service\" for k3s)")
	fl.StringVar(&p.opts.BearerTokenFile, "prometheus-bearer-token-file", "", "file holding a bearer token for Prometheus")
	fl.StringVar(&p.opts.BasicAuthUser, "prometheus-user", "", "basic auth user for Prometheus")
	fl.StringVar(&p.opts.BasicAuthPasswordFile, "prometheus-password-file", "", "file holding the basic auth password")
	fl.StringVar(&p.opts.CAFile, "prometheus-ca-file", "", "CA bundle to verify Prometheus's certificate")
	fl.StringVar(&p.opts.CertFile, "prometheus-cert-file", "", "client certificate for Prometheus (mutual TLS)")
	fl.StringVar(&p.opts.KeyFile, "prometheus-key-file", "", "client key for Prometheus (mutual TLS)")
	fl.StringVar(&p.opts.ServerName, "prometheus-server-name", "", "name to verify in Prometheus's certificate")
	fl.BoolVar(&p.opts.InsecureSkipVerify, "prometheus-insecure-skip-verify", false, "do not verify Prometheus's certificate")
	fl.DurationVar(&p.opts.Timeout, "prometheus-timeout", promql.DefaultTimeout, "time-out of one query")
}

// source validates the flags and returns the window's source (nothing is sent yet).
func (p *promFlags) source(now time.Time) (*promwindow.Source, error) {
	from, err := promql.ParseTime(p.from, now)
	if err != nil {
		return nil, err
	}
	to, err := promql.ParseTime(p.to, now)
	if err != nil {
		return nil, err
	}
	if to.IsZero() && !from.IsZero() {
		to = now
	}
	w, err := promql.NewWindow(from, to, p.last, p.step, now)
	if err != nil {
		return nil, err
	}
	jobs, err := promwindow.ParseJobs(p.jobs)
	if err != nil {
		return nil, err
	}
	if p.cpCores < 0 || math.IsNaN(p.cpCores) || math.IsInf(p.cpCores, 0) {
		return nil, fmt.Errorf("--prometheus-control-plane-cores %g: want > 0 cores", p.cpCores)
	}
	for _, sel := range p.cgroups {
		if err := promwindow.ValidCgroupSelector(sel); err != nil {
			return nil, fmt.Errorf("--prometheus-control-plane-cgroup %w", err)
		}
	}
	c, err := promql.New(p.opts)
	if err != nil {
		return nil, err
	}
	src := promwindow.NewSource(c, w, jobs, check.Rules())
	src.ControlPlaneCores = p.cpCores
	src.ControlPlaneCgroups = p.cgroups
	return src, nil
}

// runPrometheus diagnoses the window from Prometheus alone: no cluster connection, nothing created.
func (f *flags) runPrometheus(ctx context.Context, streams common.IOStreams) (*result.Report, error) {
	clk := clock.RealClock{}
	src, err := f.prom.source(clk.Now())
	if err != nil {
		return nil, err
	}
	ms, err := promwindow.RegistryOf(src, catalogue.Specs()).Select(f.only, f.skip)
	if err != nil {
		return nil, err
	}
	streams.Progressf("reading %s over %s (profiles every %s)", src.Client.URL(), src.Window, src.Window.Step)
	// An unreachable or refusing server is a run that could not happen (exit 2), not a list of errored results.
	if err := src.Discover(ctx); err != nil {
		return nil, err
	}
	rep := runner.Run(ctx, runner.Options{
		Cluster: result.Cluster{Name: "prometheus", Server: src.Client.URL(), Facts: map[string]string{"window": src.Window.String()}},
		Clock:   clk, Log: streams.Logger(f.verbose), RunID: kube.NewRunID(clk.Now()), Progress: streams.Progressf, Rules: check.Rules(),
	}, ms)
	q, n := src.Client.Cost()
	streams.Progressf("%d queries, %d samples", q, n)
	return rep, nil
}

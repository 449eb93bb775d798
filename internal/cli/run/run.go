// Package run is `kubeslow run`: the main job. It measures the cluster and names what makes it slow.
package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/dnslookup"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/internal/source/agent/image"
	"github.com/kubeslow/kubeslow/pkg/result"
)

type flags struct {
	cluster common.ClusterFlags
	out     common.OutputFlag
	only    []string
	skip    []string
	profile string
	budget  time.Duration
	failOn  string
	verbose bool
	outDir  string
	window  time.Duration
	etcd    string
	image   string
	audit   []string
	// nodeAgent is the namespace of a node agent kept running (`kubeslow watch install --node-agent`).
	nodeAgent string
	prom      promFlags
	// readOnly runs only what needs no write permission and creates nothing.
	readOnly bool
	// podsWatch makes pods.startup passive: it measures the pods others create (set by the --pods-watch-* flags).
	podsWatch podstartup.PassiveOptions
}

// NewCommand returns `kubeslow run`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Measure the cluster and name what makes it slow",
		Long: `run discovers the cluster and first says which checks it will skip for lack of permission (kubeslow
rbac prints the roles). The metric-based checks (API, etcd, control-plane usage, audit log) start watching,
the other read-only checks run, then the benchmarks within a time budget; the watchers are gathered after
them (at least --window), so they report the control plane under that load. It prints the findings, worst
first, each with its evidence, threshold and fix. --read-only runs only the read-only checks: nothing is
created.

Exit codes: 0 no finding at or above --fail-on, 1 findings, 2 could not run or nothing was measured (every
measurement skipped or errored; the reasons are printed).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := f.run(common.Context(cmd), streams)
			if err != nil {
				return &common.ExitError{Code: runner.ExitCouldNotRun, Err: err}
			}
			if err := f.out.Write(streams, rep); err != nil {
				return &common.ExitError{Code: runner.ExitCouldNotRun, Err: err}
			}
			if f.outDir != "" {
				path, err := writeReportFiles(f.outDir, rep)
				if err != nil {
					return &common.ExitError{Code: runner.ExitCouldNotRun, Err: err}
				}
				streams.Progressf("report: %s", path)
				if fs := report.SortedFindings(rep.Findings); len(fs) > 0 {
					streams.Progressf("top finding: [%s] %s %s: %s", fs[0].Severity, fs[0].ID, fs[0].Title, fs[0].Summary)
				} else {
					streams.Progressf("no findings")
				}
			}
			sev, _ := result.ParseSeverity(f.failOn)
			return common.Exit(streams, rep, sev)
		},
	}
	f.cluster.Add(cmd)
	f.out.Add(cmd)
	f.prom.add(cmd)
	fl := cmd.Flags()
	fl.StringSliceVar(&f.only, "only", nil, "run only these measurements (names or prefixes ending in '.')")
	fl.StringSliceVar(&f.skip, "skip", nil, "skip these measurements (names or prefixes ending in '.')")
	fl.StringVar(&f.profile, "profile", "quick", "quick (read-only checks and short benchmarks: 50 pods) or full (500 pods); the pods are at most what fits on the nodes they may use")
	fl.DurationVar(&f.budget, "budget", 10*time.Minute, "time budget for the benchmarks: none starts after it, and a running one stops waiting on the cluster at it (read-only checks always run)")
	fl.StringVar(&f.failOn, "fail-on", "warning", "lowest finding severity that makes the exit code 1: info, warning, error, critical")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "debug logging on stderr")
	fl.StringVar(&f.outDir, "out-dir", ".", "directory for report.json, report.html and report.xml (JUnit) (empty: write no files)")
	fl.DurationVar(&f.window, "window", 0, "least observation window of the metric-based measurements and the node agents' watch, which start before the benchmarks and end after them (default: 20s quick, 60s full)")
	fl.StringSliceVar(&f.audit, "audit-log", nil, "apiserver audit log files or directories (the file of kube-apiserver's --audit-log-path and its rotated ones) to attribute load to clients")
	fl.BoolVar(&f.readOnly, "read-only", false, "run only the read-only checks: nothing is created, only read permissions are needed (`kubeslow rbac` prints them)")
	fl.StringVar(&f.etcd, "etcd-endpoint", "", "etcd metrics endpoint (plain http), e.g. http://127.0.0.1:2381 on a kubeadm control-plane node or through a port-forward; none: etcd is read through the apiserver only")
	f.podsWatch = podstartup.DefaultPassiveOptions()
	fl.StringVar(&f.podsWatch.Namespace, "pods-watch-namespace", "", "pods.startup creates no pods and measures those others create in this namespace (with --pods-watch-selector alone: every namespace)")
	fl.StringVar(&f.podsWatch.Selector, "pods-watch-selector", "", "pods.startup creates no pods and measures those others create that match this label selector")
	fl.IntVar(&f.podsWatch.Count, "pods-watch-count", 0, "with --pods-watch-*: stop once this many new pods are Running (0: watch for all of --pods-watch-timeout)")
	fl.DurationVar(&f.podsWatch.Timeout, "pods-watch-timeout", f.podsWatch.Timeout, "with --pods-watch-*: watch at most this long")
	fl.StringVar(&f.image, "agent-image", "", "image with the kubeslow binary at /kubeslow (kubeslow image push makes one), for the node agent and the DNS probes that run kubeslow in pods (default: the lab's with --lab, else this release's, "+defaultImage()+")")
	fl.StringVar(&f.image, "image", "", "same as --agent-image")
	fl.StringVar(&f.nodeAgent, "node-agent", "", "namespace of a node agent kept running (`kubeslow watch install --node-agent`): nodes.agent reads its agents' newest reports, "+
		"read-only (it runs with --read-only too), instead of deploying agents of its own")
	return cmd
}

func (f *flags) run(ctx context.Context, streams common.IOStreams) (*result.Report, error) {
	if err := f.out.Validate(); err != nil {
		return nil, err
	}
	if _, err := result.ParseSeverity(f.failOn); err != nil {
		return nil, err
	}
	if f.profile != "quick" && f.profile != "full" {
		return nil, fmt.Errorf("unknown profile %q (want quick or full)", f.profile)
	}
	if f.prom.opts.URL != "" {
		return f.runPrometheus(ctx, streams)
	}
	window := f.window
	if window == 0 {
		window = map[string]time.Duration{"quick": 20 * time.Second, "full": 60 * time.Second}[f.profile]
	}
	ao := catalogue.Options{Window: window, EtcdEndpoint: f.etcd, AuditLogs: f.audit, Image: f.cluster.AgentImage(f.image),
		Pods: map[string]int{"quick": 50, "full": 500}[f.profile], NodeAgent: f.nodeAgent}
	if f.podsWatch.Namespace != "" || f.podsWatch.Selector != "" {
		if err := f.podsWatch.Validate(); err != nil {
			return nil, err
		}
		ao.PodsWatch = (*measure.PodsWatch)(&f.podsWatch)
	}
	ms, err := catalogue.Registry(ao).Select(f.only, f.skip)
	if err != nil {
		return nil, err
	}
	if f.readOnly {
		ms = measure.ReadOnlyOf(ms)
	}
	t, err := f.cluster.Target()
	if err != nil {
		return nil, err
	}
	plan := runner.Plan{Target: t, Measurements: ms, Rules: check.Rules(), Budget: f.budget,
		Progress: streams.Progressf, Log: streams.Logger(f.verbose)}
	if ao.Image == "" && !f.readOnly && needsImage(ms) {
		// Said once, here, rather than by each measurement it holds back (the report's gaps say it once too).
		streams.Progressf("no agent image: %s; %s", measure.WhyNoAgentImage, measure.FixAgentImage)
		plan.Said = append(plan.Said, measure.SourceAgentImage)
	}
	if f.readOnly {
		plan.NodeTierOff = "--read-only: kubeslow deploys no agent on the control-plane nodes"
	} else {
		plan.NodeTier = cpnode.NewShared(cpnode.DefaultOptions(ao.Image))
	}
	return runner.Execute(ctx, plan)
}

// imageUsers are the measurements of a run that run kubeslow in pods from the agent image.
var imageUsers = []string{nodeagent.Name, dnsready.Name, dnslookup.Name}

// needsImage reports whether one of ms runs from the agent image, itself or through the control-plane node tier
// (nodes.agent reading kept agents, a read-only measurement, runs none).
func needsImage(ms []measure.Measurement) bool {
	for _, m := range ms {
		if slices.Contains(imageUsers, m.Name()) && measure.KindOf(m) != measure.ReadOnly {
			return true
		}
	}
	return measure.UsesNodeTier(ms)
}

// writeReportFiles saves the report as report.json in dir and returns its path.
func writeReportFiles(dir string, rep *result.Report) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, o := range []struct {
		name  string
		write func(io.Writer, *result.Report) error
	}{{"report.json", result.Encode}, {"report.html", report.WriteHTML}, {"report.xml", report.WriteJUnit}} {
		f, err := os.Create(filepath.Join(dir, o.name))
		if err != nil {
			return "", err
		}
		if err := o.write(f, rep); err != nil {
			f.Close()
			return "", fmt.Errorf("writing %s: %w", o.name, err)
		}
		if err := f.Close(); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "report.html"), nil
}

// defaultImage names this release's agent image for the help, or says that a development build has none.
func defaultImage() string {
	if d := agentimage.Default(); d != "" {
		return d
	}
	return "none for a development build"
}

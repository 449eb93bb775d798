// Package bench is `kubeslow bench …`: the benchmarks run on their own (pod start-up, network paths, DNS readiness,
// disk sync, HTTP and TCP load), each a report with the rules that read it.
package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/check"
	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/kube"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/runner"
	"github.com/kubeslow/kubeslow/internal/workload"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// NewCommand returns `kubeslow bench`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Run one benchmark on its own"}
	cmd.AddCommand(newPods(streams), newHTTP(streams), newTCP(streams), newNet(streams), newDNS(streams), newDisk(streams))
	return cmd
}

func newPods(streams common.IOStreams) *cobra.Command {
	var cf common.ClusterFlags
	var out common.OutputFlag
	var kind string
	var realNodes bool
	o := podstartup.Options{}
	cmd := &cobra.Command{
		Use:   "pods",
		Short: "Pod start-up latency by phase against the 5 s p99 SLO, with the slow phase and node named",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			k, err := workload.ParseKind(kind)
			if err != nil {
				return err
			}
			if o.Count <= 0 || o.Count > 20000 {
				return fmt.Errorf("--count %d: want 1..20000", o.Count)
			}
			o.Kind, o.Simulated = k, !realNodes
			rep, err := runPods(common.Context(cmd), streams, &cf, o)
			return finish(streams, &out, rep, err)
		},
	}
	cf.Add(cmd)
	out.Add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&kind, "kind", "pods", "how pods are created: pods (by kubeslow at --create-qps), deployment or job (by their controller)")
	fl.IntVar(&o.Count, "count", 100, "pods to create")
	fl.Float64Var(&o.QPS, "create-qps", 20, "kubeslow's pod creation rate (--kind pods)")
	fl.IntVar(&o.Burst, "create-burst", 20, "kubeslow's pod creation burst (--kind pods)")
	fl.StringVar(&o.Image, "image", "", "container image (default: the lab's pause image on the lab, registry.k8s.io/pause:3.10 elsewhere)")
	fl.DurationVar(&o.SLO, "slo", podstartup.DefaultSLO, "p99 start-up threshold")
	fl.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "give up waiting for pods after this long")
	fl.BoolVar(&realNodes, "real-nodes", false, "on the lab, run on the real nodes instead of the simulated ones")
	return cmd
}

func runPods(ctx context.Context, streams common.IOStreams, cf *common.ClusterFlags, o podstartup.Options) (*result.Report, error) {
	// kubeslow's own client limit must leave room for the requested creation rate, or it would throttle the
	// benchmark itself.
	if o.Kind == workload.Pods {
		cf.QPS += float32(o.QPS)
		cf.Burst += o.Burst
	}
	return runBenchmark(ctx, streams, cf, podstartup.New(o), check.PodRules())
}

// runBenchmark runs one benchmark in a namespace of its own, which is deleted afterwards (also on Ctrl-C),
// and appends kubeslow's own cost.
func runBenchmark(ctx context.Context, streams common.IOStreams, cf *common.ClusterFlags, m measure.Measurement, rules []check.Rule) (*result.Report, error) {
	start := markNow()
	c, labInfo, err := cf.Connect()
	if err != nil {
		return nil, err
	}
	clk := clock.RealClock{}
	cl, err := kube.Discover(ctx, c.Client, c.Context, c.Config.Host)
	if err != nil {
		return nil, err
	}
	cl.Lab = labInfo != nil
	runID := kube.NewRunID(clk.Now())
	ns := "kubeslow-" + runID
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: kube.ObjectMeta(ns, "", runID)}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if dyn, err := dynamic.NewForConfig(c.Config); err == nil {
			if _, err := kube.Cleanup(cctx, dyn, runID, streams.Logger(false)); err != nil {
				streams.Progressf("cleanup failed: %v (run `kubeslow cleanup --run %s`)", err, runID)
			}
		}
	}()
	streams.Progressf("%s in %s", m.Description(), ns)
	rep := runner.Run(ctx, runner.Options{Client: c.Client, Config: c.Config, Cluster: cl, Clock: clk, Log: streams.Logger(false),
		RunID: runID, Namespace: ns, Lab: labInfo, Progress: streams.Progressf, Rules: rules},
		[]measure.Measurement{m})
	// kubeslow's own cost, up to the end of the measurement (the cleanup that follows is not counted).
	rep.Results = append(rep.Results, overhead(start, c.Requests))
	return rep, nil
}

// finish writes a benchmark's report and turns it into the exit code: 2 if it could not run, 1 with findings
// at warning or above, 0 otherwise.
func finish(streams common.IOStreams, out *common.OutputFlag, rep *result.Report, err error) error {
	if err != nil {
		return &common.ExitError{Code: 2, Err: err}
	}
	if err := out.Write(streams, rep); err != nil {
		return err
	}
	if runner.ExitCode(rep, result.SeverityWarning) != 0 {
		return &common.ExitError{Code: 1}
	}
	return nil
}

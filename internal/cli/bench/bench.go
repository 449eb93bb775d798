// Package bench is `kubeslow bench …`: the benchmarks run on their own (pod start-up, network paths, DNS readiness,
// disk sync, HTTP and TCP load), each a report with the rules that read it.
package bench

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/check"
	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/runner"
	"github.com/kubeslow/kubeslow/internal/workload"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// NewCommand returns `kubeslow bench`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Run one benchmark on its own"}
	cmd.AddCommand(newPods(streams), newHTTP(streams), newTCP(streams), newNet(streams), newDNS(streams), newDisk(streams), newChurn(streams))
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
			return runBenchmark(cmd, streams, &cf, &out, podstartup.New(o), check.PodRules())
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

// runBenchmark runs one benchmark through the run lifecycle (its own namespace, deleted afterwards, also on
// Ctrl-C; kubeslow's own cost appended) and writes the report with the exit code.
func runBenchmark(cmd *cobra.Command, streams common.IOStreams, cf *common.ClusterFlags, out *common.OutputFlag, m measure.Measurement, rules []check.Rule) error {
	t, err := cf.Target()
	if err != nil {
		return common.Finish(streams, out, nil, err, result.SeverityWarning)
	}
	streams.Progressf("%s", m.Description())
	rep, err := runner.Execute(common.Context(cmd), runner.Plan{Target: t, Measurements: []measure.Measurement{m}, Rules: rules,
		Progress: streams.Progressf, Log: streams.Logger(false)})
	return common.Finish(streams, out, rep, err, result.SeverityWarning)
}

// Package bench is `kubeslow bench …`: the benchmarks run on their own (pod start-up, network paths, DNS readiness,
// disk sync, HTTP and TCP load), each a report with the rules its measurement declares.
package bench

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/load/workload"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// NewCommand returns `kubeslow bench`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Run one benchmark on its own"}
	cmd.AddCommand(newPods(streams), newHTTP(streams), newTCP(streams), newNet(streams), newMTU(streams), newDNS(streams), newDNSLoad(streams), newJob(streams), newDisk(streams), newChurn(streams))
	return cmd
}

func newPods(streams common.IOStreams) *cobra.Command {
	var cf common.ClusterFlags
	var out common.OutputFlag
	var kind string
	var realNodes, passive bool
	var prof profileFlags
	o := podstartup.DefaultOptions()
	po := podstartup.DefaultPassiveOptions()
	cmd := &cobra.Command{
		Use:   "pods",
		Short: "Pod start-up latency by phase against the 5 s p99 SLO, with the slow phase and node named",
		Long: `Pod start-up latency by phase against the 5 s p99 SLO, with the slow phase and node named.

By default kubeslow creates the pods (--kind, --count, --create-qps). --kind pods creates them at a steady
--create-qps from the first pod, as clusterloader2's qps (qpsLoad) does; --create-burst N sends N at once
first, deliberately (they queue in the scheduler, and the start-up tail measures that queue). The result
states the load's rate and burst beside the SLI. With --passive it creates nothing and
measures the pods others create (a Deployment's rollout, a peer benchmark) that match --watch-namespace
and --watch-selector, until --count new pods are Running (0: for all of --timeout); it needs only list and
watch on pods and events (the view role); the result gives their measured creation rate, not kubeslow's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			var m measure.Measurement
			if passive {
				for _, f := range []string{"kind", "create-qps", "create-burst", "image", "real-nodes"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--%s: --passive creates no pods", f)
					}
				}
				po.Count, po.SLO, po.Timeout = 0, o.SLO, o.Timeout
				if cmd.Flags().Changed("count") {
					po.Count = o.Count
				}
				if err := po.Validate(); err != nil {
					return err
				}
				m = podstartup.NewPassive(po)
			} else {
				for _, f := range []string{"watch-namespace", "watch-selector"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--%s needs --passive", f)
					}
				}
				k, err := workload.ParseKind(kind)
				if err != nil {
					return err
				}
				o.Kind, o.Simulated = k, !realNodes
				if err := o.Validate(); err != nil {
					return err
				}
				m = podstartup.New(o)
			}
			stop, err := prof.start()
			if err != nil {
				return err
			}
			defer stop()
			return runBenchmark(cmd, streams, &cf, &out, m, podstartup.Rules())
		},
	}
	cf.Add(cmd)
	out.Add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&kind, "kind", "pods", "how pods are created: pods (by kubeslow at --create-qps), deployment or job (by their controller)")
	o.AddFlags(fl)
	fl.BoolVar(&realNodes, "real-nodes", false, "run on real nodes only (default: kwok's simulated nodes where the cluster has some with room, else real ones)")
	fl.BoolVar(&passive, "passive", false, "create nothing: measure the pods others create that match --watch-namespace and --watch-selector")
	fl.StringVar(&po.Namespace, "watch-namespace", "", "with --passive: the pods' namespace (default: every namespace)")
	fl.StringVar(&po.Selector, "watch-selector", "", "with --passive: the pods' label selector, e.g. app=web (default: every pod)")
	prof.add(fl)
	return cmd
}

// runBenchmark runs one benchmark through the run lifecycle (its own namespace, deleted afterwards, also on
// Ctrl-C; kubeslow's own cost appended) and writes the report with the exit code.
func runBenchmark(cmd *cobra.Command, streams common.IOStreams, cf *common.ClusterFlags, out *common.OutputFlag, m measure.Measurement, rules []rule.Rule) error {
	t, err := cf.Target()
	if err != nil {
		return common.Finish(streams, out, nil, err, result.SeverityWarning)
	}
	streams.Progressf("%s", m.Description())
	rep, err := runner.Execute(common.Context(cmd), runner.Plan{Target: t, Measurements: []measure.Measurement{m}, Rules: rules,
		Progress: streams.Progressf, Log: streams.Logger(false)})
	return common.Finish(streams, out, rep, err, result.SeverityWarning)
}

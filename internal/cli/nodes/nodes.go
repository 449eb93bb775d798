// Package nodes is `kubeslow nodes`: the node sweep on its own (issue 15): every real node's kubelet through
// the node proxy and, unless --read-only, the node agent DaemonSet.
package nodes

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// NewCommand returns `kubeslow nodes`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	var cf common.ClusterFlags
	var out common.OutputFlag
	var readOnly bool
	o := nodeagent.DefaultOptions("")
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "Sweep every real node: kubelet settings and latency through the node proxy, and (unless --read-only) the node agent DaemonSet",
		Long: `nodes reads every real node's kubelet /configz and /metrics through the apiserver's node proxy (read-only:
serialized image pulls, maxPods, pod-start SLI outliers) and runs kubeslow's node agent as a DaemonSet of the run
on every real node (neighbour table vs gc_thresh, conntrack, kernel log lines, D-state processes, PSI, the disks
under the kubelet and the runtime with a short sync-write probe), then names the node-level causes (docs/nodes.md).
--read-only leaves the DaemonSet out. --image must hold the kubeslow binary at /kubeslow (on the lab: automatic).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			if o.ProbeBytes < 0 || o.ProbeBytes > 8<<20 || o.Window <= 0 || o.Window > time.Minute || o.Timeout <= 0 || o.Timeout > 30*time.Minute {
				return fmt.Errorf("--probe-bytes [0, 8 MiB], --window (0, 1m], --timeout (0, 30m]")
			}
			ms := []measure.Measurement{kubelet.New()}
			if !readOnly {
				if o.Image = cf.AgentImage(o.Image); o.Image == "" {
					return fmt.Errorf("--image is needed for the node agent (or --read-only)")
				}
				ms = append(ms, nodeagent.New(o))
			}
			t, err := cf.Target()
			if err != nil {
				return common.Finish(streams, &out, nil, err, result.SeverityWarning)
			}
			rep, err := runner.Execute(common.Context(cmd), runner.Plan{Target: t, Measurements: ms, Rules: append(nodeagent.Rules(), kubelet.Rules()...),
				Progress: streams.Progressf, Log: streams.Logger(false)})
			return common.Finish(streams, &out, rep, err, result.SeverityWarning)
		},
	}
	cf.Add(cmd)
	out.Add(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&readOnly, "read-only", false, "only the node proxy reads (creates nothing)")
	fl.StringVar(&o.Image, "image", "", "agent image with /kubeslow (default on the lab: "+lab.AgentImage+")")
	fl.Int64Var(&o.ProbeBytes, "probe-bytes", o.ProbeBytes, "bytes of each directory's sync-write probe (0: none)")
	fl.DurationVar(&o.Window, "window", o.Window, "how long each agent watches its node (D state, pressure, conntrack growth, every pod's DNS queries); a DNS time-out is 5 s")
	fl.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long to wait for the agents' reports")
	return cmd
}

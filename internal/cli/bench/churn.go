package bench

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/bench/churn"
	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/lab"
)

func newChurn(streams common.IOStreams) *cobra.Command {
	var cf common.ClusterFlags
	var out common.OutputFlag
	var diskDirs []string
	var sampleVia string
	o := churn.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "churn",
		Short: "Start and delete pods on chosen nodes for a count or a duration; start latency over time, the nodes' disks alongside, and the change point named",
		Long: `churn starts one pod (one container, the pause image), waits until it runs, deletes it and waits until it is
gone, again and again on --nodes (default: every Ready node that is not simulated), --concurrency at a time,
until --count pods or --duration, whichever comes first. Each start is timed by phase (the pod start-up
timeline of bench pods). Alongside, every --sample-interval, the runtime's disk of each node is sampled:
one write+fdatasync, IOPS and throughput from /proc/diskstats, I/O pressure (PSI) and the tasks in D state —
on the lab in-process (its nodes share this machine), elsewhere by an agent pod of the run on each node
(--agent-image; hostPath of --runtime-dir and the host's /proc read-only, no capabilities), or from
--disk-dir NODE=DIR when kubeslow runs on that node. Then the change point of start latency over the run (PELT, MBIC penalty) and what the disk did
at that moment: a disk that ran out of burst credits or hit a throttle is named with its fix; a steady slow
disk is told apart from a sudden slowdown (case C).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if sampleVia != "auto" && sampleVia != "agent" && sampleVia != "local" {
				return fmt.Errorf("--sample-via %q: want auto, agent or local", sampleVia)
			}
			o.DiskDirs, o.AgentDirs = map[string]string{}, map[string]string{}
			if cf.Lab {
				d, err := lab.DefaultDirs()
				if err != nil {
					return err
				}
				for i := 1; i <= lab.MaxRealNodes; i++ {
					if dir := lab.RealNodeDir(d, i); isDir(dir) {
						// The lab's node directory holds its containerd root: local (this machine) or by the
						// agent pod on the node (the same kernel, through the pod's mounts).
						o.AgentDirs[lab.RealNodeName(i)] = dir
						if sampleVia != "agent" {
							o.DiskDirs[lab.RealNodeName(i)] = dir
						}
					}
				}
			}
			for _, nd := range diskDirs {
				node, dir, ok := strings.Cut(nd, "=")
				if !ok || node == "" || !isDir(dir) {
					return fmt.Errorf("--disk-dir %q: want NODE=DIR with an existing directory", nd)
				}
				o.DiskDirs[node] = dir
			}
			if sampleVia != "local" {
				o.AgentImage = cf.AgentImage(o.AgentImage)
			} else {
				o.AgentImage = ""
			}
			return runBenchmark(cmd, streams, &cf, &out, churn.New(o, streams.Progressf), churn.Rules())
		},
	}
	cf.Add(cmd)
	out.Add(cmd)
	fl := cmd.Flags()
	o.AddFlags(fl)
	fl.StringSliceVar(&diskDirs, "disk-dir", nil, "NODE=DIR: sample NODE's runtime disk through DIR on this machine (repeatable; automatic on the lab)")
	fl.StringVar(&sampleVia, "sample-via", "auto", "how the nodes' disks are sampled: auto (in-process where a directory is known here, the lab's nodes; an agent pod elsewhere), agent (an agent pod on every node, also on the lab), local (in-process only)")
	fl.StringVar(&o.AgentImage, "agent-image", "", "agent image with /kubeslow for the disk sampler pods (default on the lab: "+lab.AgentImage+")")
	return cmd
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

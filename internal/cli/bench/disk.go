package bench

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/bench/churn"
	"github.com/kubeslow/kubeslow/internal/bench/diskagent"
	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func newDisk(streams common.IOStreams) *cobra.Command {
	var out common.OutputFlag
	var dir, node, image string
	var cf common.ClusterFlags
	var timeout time.Duration
	r := diskprobe.EtcdRecipe
	cmd := &cobra.Command{
		Use:   "disk",
		Short: "etcd's fio recipe on a directory: sequential 2,300-byte writes, fdatasync after each; fdatasync p50/p99/max and IOPS against etcd's 10 ms p99",
		Long: `disk writes a new file in --path (on the disk to judge: etcd's data directory, the container runtime's)
sequentially in --block-size writes up to --size, calling fdatasync after each, as etcd's WAL does and as
etcd's documented fio recipe measures (fio --rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=2300).
It reports the fdatasync latency p50/p99/max and the write IOPS, with etcd's verdict (p99 below 10 ms),
then removes the file. docs/disk.md compares it with fio on the same file.

With --node, it runs in an agent pod of the run on that node (--image; on the lab the lab's), with only --path
mounted from the host (hostPath, read-write; no capabilities, read-only root filesystem), and the report is
read back from the pod's log. --path then names the directory as the node sees it (default there: the
container runtime's, /var/lib/containerd).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			if err := r.Validate(); err != nil {
				return err
			}
			if node != "" {
				if !cmd.Flags().Changed(agentproto.FlagPath) {
					dir = churn.DefaultRuntimeDir
				}
				if !filepath.IsAbs(dir) {
					return fmt.Errorf("--path %q: with --node, an absolute directory on the node", dir)
				}
				m := &diskagent.Bench{Node: node, Dir: filepath.Clean(dir), Image: cf.AgentImage(image), Recipe: r, Timeout: timeout}
				return runBenchmark(cmd, streams, &cf, &out, m, diskagent.Spec.Rules())
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			start := time.Now()
			streams.Progressf("writing %d bytes in %d-byte writes with fdatasync after each in %s", r.Size, r.BlockSize, abs)
			res, err := diskprobe.RunSync(common.Context(cmd), abs, r)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			rep := runner.StandaloneReport("local", abs, start, disk.BenchResult(abs, res.Summary(), start, time.Now()))
			rep.Findings, rep.Rules = rule.Evaluate(rep, disk.Rules())
			return common.Finish(streams, &out, rep, nil, result.SeverityWarning)
		},
	}
	out.Add(cmd)
	cf.Add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&node, "node", "", "run the recipe on this node, in an agent pod (default: here, on --path)")
	fl.StringVar(&image, "image", "", "agent image with /kubeslow, for --node (default on the lab: "+lab.AgentImage+")")
	fl.DurationVar(&timeout, "timeout", 10*time.Minute, "with --node, give up when the agent pod has not finished by then")
	fl.StringVar(&dir, agentproto.FlagPath, ".", "directory on the disk to measure (a file is created there and removed)")
	r.AddFlags(fl)
	return cmd
}

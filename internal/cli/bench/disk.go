package bench

import (
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/runner"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func newDisk(streams common.IOStreams) *cobra.Command {
	var out common.OutputFlag
	var dir string
	r := disk.EtcdRecipe
	cmd := &cobra.Command{
		Use:   "disk",
		Short: "etcd's fio recipe on a directory: sequential 2,300-byte writes, fdatasync after each; fdatasync p50/p99/max and IOPS against etcd's 10 ms p99",
		Long: `disk writes a new file in --path (on the disk to judge: etcd's data directory, the container runtime's)
sequentially in --block-size writes up to --size, calling fdatasync after each, as etcd's WAL does and as
etcd's documented fio recipe measures (fio --rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=2300).
It reports the fdatasync latency p50/p99/max and the write IOPS, with etcd's verdict (p99 below 10 ms),
then removes the file. docs/disk.md compares it with fio on the same file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			if err := r.Validate(); err != nil {
				return err
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			start := time.Now()
			streams.Progressf("writing %d bytes in %d-byte writes with fdatasync after each in %s", r.Size, r.BlockSize, abs)
			res, err := disk.RunSync(common.Context(cmd), abs, r)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			rep := runner.StandaloneReport("local", abs, start, disk.BenchResult(abs, res.Summary(), start, time.Now()))
			rep.Findings, rep.Rules = rule.Evaluate(rep, disk.Rules())
			return common.Finish(streams, &out, rep, nil, result.SeverityWarning)
		},
	}
	out.Add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&dir, "path", ".", "directory on the disk to measure (a file is created there and removed)")
	r.AddFlags(fl)
	return cmd
}

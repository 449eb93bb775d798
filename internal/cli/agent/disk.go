package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
)

// newDiskSample is `kubeslow agent disk-sample`: the node side of `bench churn`'s disk watch, one JSON line
// per interval on stdout.
func newDiskSample(streams common.IOStreams) *cobra.Command {
	o := diskprobe.SamplerOptions{}
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "disk-sample",
		Short: "Every --interval, print one JSON line: a write+fdatasync's latency on --dir's disk, its IOPS and throughput (/proc/diskstats), I/O pressure (PSI) and the D-state tasks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if duration <= 0 || duration > 24*time.Hour || o.Interval < 100*time.Millisecond {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--duration (0, 24h] and --interval >= 100ms")}
			}
			s, err := diskprobe.NewSampler(o)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(common.Context(cmd), duration)
			defer cancel()
			enc := json.NewEncoder(streams.Out)
			streams.Progressf("sampling %s (device %q) every %s for %s", o.Dir, s.Device(), o.Interval, duration)
			err = s.Run(ctx, func(smp diskprobe.Sample) {
				if math.IsNaN(smp.SyncSeconds) {
					smp.SyncSeconds = -1 // JSON has no NaN: -1 is "not probed"
				}
				_ = enc.Encode(smp)
			})
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Root, agentproto.FlagRoot, "/", "where the host's filesystem is mounted (\"/host\" in a pod with a hostPath mount)")
	fl.StringVar(&o.Dir, agentproto.FlagDir, "/var/lib/containerd", "a directory on the disk to watch, as the host sees it")
	fl.DurationVar(&o.Interval, agentproto.FlagInterval, time.Second, "sampling interval")
	fl.DurationVar(&duration, agentproto.FlagDuration, 10*time.Minute, "stop after this long")
	fl.IntVar(&o.ProbeBytes, agentproto.FlagProbeSize, 4096, "bytes per probe write (-1: no probe)")
	return cmd
}

package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/lab"
)

// newCredits is the burst-credits scenario's controller, run by the scenario as a lab process.
func newCredits(streams common.IOStreams) *cobra.Command {
	var dev string
	var tick, duration time.Duration
	b := lab.CreditBucket{}
	cmd := &cobra.Command{
		Use:    "credits",
		Short:  "Meter a block device's I/O against a burst-credit bucket and throttle it to a baseline when the bucket is empty (burst-credits scenario)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if b.Capacity <= 0 || b.BaselineIOPS < 1 || b.BurstIOPS < b.BaselineIOPS || tick < 10*time.Millisecond || duration <= 0 || duration > 2*time.Hour {
				return fmt.Errorf("--capacity > 0, 1 <= --baseline-iops <= --burst-iops, --tick >= 10ms, --duration (0, 2h]")
			}
			b.Credits = b.Capacity
			ctx, cancel := context.WithTimeout(common.Context(cmd), duration)
			defer cancel()
			return lab.RunCredits(ctx, dev, b, tick, streams.Out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dev, "device", "", "block device (e.g. /dev/loop3)")
	fl.Float64Var(&b.Capacity, "capacity", 0, "credits in a full bucket (I/Os)")
	fl.Float64Var(&b.BaselineIOPS, "baseline-iops", 0, "refill rate and limit when the bucket is empty")
	fl.Float64Var(&b.BurstIOPS, "burst-iops", 3000, "limit while there are credits")
	fl.DurationVar(&tick, "tick", 100*time.Millisecond, "metering period")
	fl.DurationVar(&duration, "duration", 30*time.Minute, "stop (and lift the throttle) after this long")
	_ = cmd.MarkFlagRequired("device")
	return cmd
}

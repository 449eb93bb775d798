package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/lab"
)

// newThrottle is the disk-throttle scenario's timer, run by the scenario as a lab process.
func newThrottle(streams common.IOStreams) *cobra.Command {
	var dev string
	var after, tick, duration time.Duration
	var iops int
	cmd := &cobra.Command{
		Use:    "throttle",
		Short:  "After --after, hold a block device to --iops reads and writes a second (blkio throttle) until --duration ends (disk-throttle scenario)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if iops < 1 || after < 0 || tick < 10*time.Millisecond || duration <= after || duration > 2*time.Hour {
				return fmt.Errorf("--iops >= 1, --after >= 0, --tick >= 10ms, --duration (--after, 2h]")
			}
			ctx, cancel := context.WithTimeout(common.Context(cmd), duration)
			defer cancel()
			return lab.RunStepThrottle(ctx, dev, after, iops, tick, streams.Out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dev, "device", "", "block device (e.g. /dev/loop3)")
	fl.DurationVar(&after, "after", 3*time.Minute, "throttle this long after the start")
	fl.IntVar(&iops, "iops", 100, "the limit, reads and writes a second each")
	fl.DurationVar(&tick, "tick", 100*time.Millisecond, "how often new cgroups get the limit")
	fl.DurationVar(&duration, "duration", 30*time.Minute, "stop (and lift the throttle) after this long")
	_ = cmd.MarkFlagRequired("device")
	return cmd
}

// newCgroupMetrics is the exporter of the control plane's cgroup counters, run by `lab up --prometheus` as a
// lab process and scraped by the lab's Prometheus.
func newCgroupMetrics() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:    "cgroup-metrics",
		Short:  "Serve the lab control plane's cgroup CPU counters, quota and throttling as cAdvisor's series (run by `lab up --prometheus`)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lab.ServeCgroupMetrics(common.Context(cmd), listen)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", lab.CgroupMetricsAddr(), "address to serve /metrics on")
	return cmd
}

// newWebhook is the admission webhook scenarios' server, run by them as a lab process.
func newWebhook(streams common.IOStreams) *cobra.Command {
	var listen, cert, key string
	var delay, duration time.Duration
	var hang bool
	cmd := &cobra.Command{
		Use:    "webhook",
		Short:  "Serve admission reviews over TLS, allowing each after --delay, or holding each unanswered with --hang, until --duration ends (slow-webhook, webhook-timeout scenarios)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if delay < 0 || duration <= 0 || duration > 2*time.Hour {
				return fmt.Errorf("--delay >= 0, --duration (0, 2h]")
			}
			ctx, cancel := context.WithTimeout(common.Context(cmd), duration)
			defer cancel()
			return lab.ServeWebhook(ctx, listen, cert, key, delay, hang, streams.Out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "", "address to serve on (host:port)")
	fl.StringVar(&cert, "cert", "", "serving certificate (PEM)")
	fl.StringVar(&key, "key", "", "its key (PEM)")
	fl.DurationVar(&delay, "delay", 0, "wait this long before allowing each review")
	fl.BoolVar(&hang, "hang", false, "never answer: each call waits out the apiserver's timeout")
	fl.DurationVar(&duration, "duration", 30*time.Minute, "stop after this long")
	for _, f := range []string{"listen", "cert", "key"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

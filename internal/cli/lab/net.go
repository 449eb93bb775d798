package lab

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab/netlab"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func newNet(streams common.IOStreams) *cobra.Command {
	var out common.OutputFlag
	o := netlab.BenchOptions{}
	cmd := &cobra.Command{
		Use:   "net",
		Short: "The same HTTP benchmark through CNI-like data paths built in network namespaces (no Kubernetes)",
		Long: `net builds each data path of docs/netlab.md in its own network namespaces (loopback, routed veth, bridge,
VXLAN overlay with MTU 1450, tc-eBPF redirect, kube-proxy-style NAT with N services in iptables-legacy,
iptables-nft and an nftables map), runs kubeslow's server and client inside them (pinned to separate cores),
closed loop with keep-alive and with a new connection per request, repeated, and reports requests/s with its
spread, p99 and the ratio to loopback. Needs root; everything is removed afterwards.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			if os.Geteuid() != 0 {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("lab net needs root (network namespaces)")}
			}
			bin, err := os.Executable()
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			o.Binary, o.Progress = bin, streams.Progressf
			start := time.Now()
			res, err := netlab.Bench(common.Context(cmd), o)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			return common.Finish(streams, &out, runner.StandaloneReport("netlab", "network namespaces", start, res), nil, result.SeverityWarning)
		},
	}
	out.Add(cmd)
	fl := cmd.Flags()
	fl.StringSliceVar(&o.Paths, "paths", nil, "paths to run (default: all; e.g. loopback,veth,vxlan,nat-iptables-legacy-1000)")
	fl.IntSliceVar(&o.Services, "services", []int{1, 1000, 10000, 30000}, "NAT service counts (the target is the last service)")
	fl.DurationVarP(&o.Duration, "duration", "d", 3*time.Second, "each run's length (at most 1m)")
	fl.IntVar(&o.Repeats, "repeats", 3, "runs per path and connection mode (1..10)")
	fl.IntVarP(&o.Concurrency, "concurrency", "c", 8, "client connections")
	return cmd
}

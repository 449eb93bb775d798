package bench

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/load/loadgen"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TCPName is the result of `kubeslow bench tcp`.
const TCPName = "net.tcp"

func newTCP(streams common.IOStreams) *cobra.Command {
	var out common.OutputFlag
	var d time.Duration
	var size int
	cmd := &cobra.Command{
		Use:   "tcp HOST:PORT",
		Short: "TCP bulk throughput (Gbit/s delivered) and 1-byte request/response (transactions/s, latency) against `kubeslow agent serve --tcp-listen`",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.Validate(); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			if err := loadgen.ValidateTCP(d, size); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			addr := args[0]
			dial := func(ctx context.Context) (net.Conn, error) {
				dl := net.Dialer{Timeout: 5 * time.Second}
				return dl.DialContext(ctx, "tcp", addr)
			}
			ctx := common.Context(cmd)
			start := time.Now()
			r := result.Result{Name: TCPName, Status: result.StatusPass, Start: start}
			streams.Progressf("%s: stream for %s (%d-byte writes)", addr, d, size)
			st, err := loadgen.TCPStreamRun(ctx, dial, d, size)
			if err != nil {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("stream test: %w", err)}
			}
			streams.Progressf("%s: request/response for %s", addr, d)
			rr, err := loadgen.TCPRRRun(ctx, dial, d)
			if err != nil {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("request/response test: %w", err)}
			}
			r.Metrics = TCPMetrics(st, rr, nil)
			r.End = time.Now()
			return common.Finish(streams, &out, runner.StandaloneReport("none", addr, start, r), nil, result.SeverityWarning)
		},
	}
	out.Add(cmd)
	cmd.Flags().DurationVarP(&d, "duration", "d", 5*time.Second, fmt.Sprintf("length of each test (at most %s)", loadgen.MaxDuration))
	cmd.Flags().IntVar(&size, "size", 128<<10, fmt.Sprintf("stream write size in bytes (1..%d)", loadgen.MaxTCPWrite))
	return cmd
}

// TCPMetrics are the stream and request/response figures as report metrics.
func TCPMetrics(st, rr *loadgen.TCPResult, labels map[string]string) []result.Metric {
	ms := []result.Metric{
		{Name: "stream_gbit_per_second", Unit: "gbit_per_second", Value: st.BitsPerSec / 1e9, Labels: labels},
		{Name: "rr_transactions_per_second", Unit: "transactions_per_second", Value: float64(rr.Transactions) / rr.Elapsed.Seconds(), Labels: labels},
	}
	for _, q := range loadgen.Quantiles {
		ms = append(ms, result.Metric{Name: "rr_latency_" + q.Name, Unit: "seconds", Value: float64(rr.Latency.ValueAtQuantile(q.Q)) / 1e6, Labels: labels})
	}
	return ms
}

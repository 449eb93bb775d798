package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// newBurn is `kubeslow agent burn` (hidden): the lab's CPU and memory workloads — threads that spin, memory
// allocated and touched step by step and held, and an HTTP endpoint for a probe — for the throttling and OOM
// scenarios. It runs until stopped, or for --for and then exits 0 (an init container that takes its time).
func newBurn(streams common.IOStreams) *cobra.Command {
	var threads int
	var memory, step int64
	var interval, lasts, listenAfter time.Duration
	var listen string
	cmd := &cobra.Command{
		Use:    "burn",
		Hidden: true,
		Short:  "Spin --threads threads, allocate and hold --memory bytes (--step every --interval), serve 200 on --listen; until stopped",
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if threads < 0 || threads > 64 || memory < 0 || step <= 0 || interval <= 0 || listenAfter < 0 {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--%s 0..64, --%s >= 0, --step > 0, --%s > 0, --listen-after >= 0", agentproto.FlagThreads, agentproto.FlagMemory, agentproto.FlagInterval)}
			}
			ctx := common.Context(cmd)
			if lasts > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, lasts)
				defer cancel()
			}
			if listen != "" {
				// An app that takes --listen-after to start: its port refuses connections until then.
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(listenAfter):
				}
				ln, err := net.Listen("tcp", listen)
				if err != nil {
					return &common.ExitError{Code: 2, Err: err}
				}
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
					ReadHeaderTimeout: 10 * time.Second}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
			}
			for i := 0; i < threads; i++ {
				go spin(ctx.Done())
			}
			fmt.Fprintf(streams.Out, "burning: %d threads, %d bytes\n", threads, memory)
			var held [][]byte
			var total int64
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					_ = held
					return nil
				case <-t.C:
					if total >= memory {
						continue
					}
					n := min(step, memory-total)
					b := make([]byte, n)
					for j := 0; j < len(b); j += 4096 {
						b[j] = 1 // touch every page: resident, charged to the cgroup
					}
					held = append(held, b)
					total += n
				}
			}
		},
	}
	cmd.Flags().IntVar(&threads, agentproto.FlagThreads, 0, "threads that spin")
	cmd.Flags().Int64Var(&memory, agentproto.FlagMemory, 0, "bytes to allocate, touch and hold")
	cmd.Flags().Int64Var(&step, "step", 16<<20, "bytes allocated each --interval")
	cmd.Flags().DurationVar(&interval, agentproto.FlagInterval, 100*time.Millisecond, "time between allocations")
	cmd.Flags().StringVar(&listen, agentproto.FlagListen, "", "address to answer HTTP 200 on (empty: none)")
	cmd.Flags().DurationVar(&listenAfter, "listen-after", 0, "open --listen only after this long, and only then start the rest (an app slow to start: its probe fails until then)")
	cmd.Flags().DurationVar(&lasts, "for", 0, "exit 0 after this long (0: run until stopped)")
	return cmd
}

// spin burns a CPU until done closes.
func spin(done <-chan struct{}) {
	x := uint64(1)
	for {
		for i := 0; i < 1<<16; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		select {
		case <-done:
			return
		default:
		}
	}
}

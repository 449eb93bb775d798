// Package pause is `kubeslow pause`: the lab's pod sandbox process. It sleeps as PID 1, reaps orphaned
// children, and exits on SIGINT or SIGTERM — what the Kubernetes pause container does.
package pause

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
)

// NewCommand returns the hidden pause command.
func NewCommand(_ common.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:    "pause",
		Short:  "Sleep as a pod sandbox's PID 1 (the lab's pause image runs this)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sig := make(chan os.Signal, 8)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
			ctx := common.Context(cmd)
			for {
				select {
				case <-ctx.Done():
					return nil
				case s := <-sig:
					if s != syscall.SIGCHLD {
						return nil
					}
					for {
						var ws syscall.WaitStatus
						pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
						if pid <= 0 || err != nil {
							break
						}
					}
				}
			}
		},
	}
}

// Package agent is `kubeslow agent …`: the in-cluster and in-lab side of the network benchmarks.
package agent

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/agent"
	"github.com/kubeslow/kubeslow/internal/cli/common"
)

// NewCommand returns `kubeslow agent`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Agent mode: the server side of the network benchmarks"}
	var listen string
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve HTTP: read each request's body and answer 404 at once (case D's server)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			// The address goes to stdout first, so a parent can learn the port of ":0".
			fmt.Fprintf(streams.Out, "listening %s\n", ln.Addr())
			return agent.Serve(common.Context(cmd), ln, agent.Handler())
		},
	}
	serve.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to listen on")
	cmd.AddCommand(serve)
	return cmd
}

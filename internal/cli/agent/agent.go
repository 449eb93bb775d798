// Package agent is `kubeslow agent …`: the in-cluster and in-lab side of the network benchmarks.
package agent

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// NewCommand returns `kubeslow agent`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Agent mode: the server side of the network benchmarks"}
	var listen, tcpListen, engine string
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve HTTP (read each request's body, answer 404 at once: case D's server) and, with --tcp-listen, the TCP stream and request/response tests",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var serveHTTP func(context.Context, net.Listener) error
			switch {
			case engine == "go":
				serveHTTP = func(ctx context.Context, ln net.Listener) error { return agent.Serve(ctx, ln, agent.Handler()) }
			case engine == "epoll" && agent.EpollAvailable:
				serveHTTP = func(ctx context.Context, ln net.Listener) error { return agent.ServeEpoll(ctx, ln.(*net.TCPListener)) }
			default:
				return &common.ExitError{Code: 2, Err: fmt.Errorf("engine %q: want go or, on Linux, epoll", engine)}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			ctx := common.Context(cmd)
			if tcpListen != "" {
				tln, err := net.Listen("tcp", tcpListen)
				if err != nil {
					ln.Close()
					return &common.ExitError{Code: 2, Err: err}
				}
				fmt.Fprintf(streams.Out, "listening-tcp %s\n", tln.Addr())
				go func() {
					if err := agent.ServeTCP(ctx, tln); err != nil {
						streams.Progressf("tcp server: %v", err)
					}
				}()
			}
			// The address goes to stdout last, so a parent that read this line knows both servers are up
			// (and learns the port of ":0").
			fmt.Fprintf(streams.Out, "listening %s\n", ln.Addr())
			defer ln.Close()
			return serveHTTP(ctx, ln)
		},
	}
	defEngine := "go"
	if agent.EpollAvailable {
		defEngine = "epoll"
	}
	serve.Flags().StringVar(&engine, "engine", defEngine, "HTTP server: epoll (an epoll loop per thread, little more than the kernel's cost per request) or go (net/http)")
	serve.Flags().StringVar(&listen, agentproto.FlagListen, "127.0.0.1:8080", "address to serve HTTP on")
	serve.Flags().StringVar(&tcpListen, agentproto.FlagTCPListen, "", "address to serve the TCP stream and request/response tests on (empty: none)")
	cmd.AddCommand(serve, newDiskSample(streams), newNode(streams), newExists(streams), newDNSUpstream(streams), newJobPeer(streams), newBurn(streams),
		newControlPlane(streams), newCPScrape(streams), newCPAudit(streams))
	return cmd
}

// Package probe is `kubeslow probe`: one-shot checks run inside pods (the lab image and real-cluster agents
// run the same binary): resolve a DNS name, fetch a URL.
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
)

// NewCommand returns `kubeslow probe`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "probe", Short: "One-shot network checks, for use inside pods"}
	var timeout time.Duration
	cmd.PersistentFlags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long")
	cmd.AddCommand(&cobra.Command{
		Use:   "dns NAME",
		Short: "Resolve NAME with the pod's resolver; print the addresses; exit 1 if it does not resolve",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(common.Context(cmd), timeout)
			defer cancel()
			addrs, err := net.DefaultResolver.LookupHost(ctx, args[0])
			if err != nil {
				var dnsErr *net.DNSError
				if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
					return &common.ExitError{Code: 1, Err: fmt.Errorf("NXDOMAIN: %s", args[0])}
				}
				return &common.ExitError{Code: 2, Err: err}
			}
			for _, a := range addrs {
				fmt.Fprintln(streams.Out, a)
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "http URL",
		Short: "GET URL; print the status line and up to 1 KiB of the body; exit 1 on a transport error",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(common.Context(cmd), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return &common.ExitError{Code: 1, Err: err}
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			fmt.Fprintf(streams.Out, "%s\n%s\n", resp.Status, body)
			return nil
		},
	})
	return cmd
}

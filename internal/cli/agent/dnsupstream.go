package agent

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/load/dnsload"
)

// newDNSUpstream is `kubeslow agent dns-upstream`: the lab's upstream for external names, with a per-source
// query limit (case B's per-VM DNS limit).
func newDNSUpstream(streams common.IOStreams) *cobra.Command {
	var listen, zone, addr string
	var limit float64
	cmd := &cobra.Command{
		Use:   "dns-upstream",
		Short: "Serve DNS for external names (an A record for every name under --zone, NXDOMAIN otherwise), dropping a source's queries over --limit per second",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ip := net.ParseIP(addr)
			if ip == nil || ip.To4() == nil {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--answer %q: want an IPv4 address", addr)}
			}
			u := &dnsload.Upstream{Zone: zone, Addr: ip, Limit: limit}
			err := u.ListenAndServe(common.Context(cmd), listen, func(a net.Addr) { fmt.Fprintf(streams.Out, "listening %s\n", a) })
			answered, dropped := u.Counts()
			for src, n := range answered {
				streams.Progressf("%s: %d answered, %d dropped", src, n, dropped[src])
			}
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:5353", "UDP address to serve on")
	cmd.Flags().StringVar(&zone, "zone", "ext.kubeslow.test", "the external zone: every name under it has an A record")
	cmd.Flags().StringVar(&addr, "answer", "198.18.0.80", "the address the A records point to")
	cmd.Flags().Float64Var(&limit, "limit", 0, "queries per second answered per source address (0: no limit); the rest are dropped")
	return cmd
}

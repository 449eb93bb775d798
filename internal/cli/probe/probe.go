// Package probe is `kubeslow probe`: one-shot checks run inside pods (the lab image and real-cluster agents
// run the same binary): resolve a DNS name, fetch a URL.
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// NewCommand returns `kubeslow probe`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "probe", Short: "One-shot network checks, for use inside pods"}
	var timeout time.Duration
	cmd.PersistentFlags().DurationVar(&timeout, agentproto.FlagTimeout, 5*time.Second, "give up after this long")
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
	var interval, wait time.Duration
	dnsWait := &cobra.Command{
		Use:   "dns-wait NAME...",
		Short: "Resolve each NAME every --interval until it resolves or --wait ends, as a client waiting for its peers; print (JSON) when each first resolved",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval < 10*time.Millisecond || wait <= 0 || wait > 10*time.Minute || len(args) > 1000 {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--interval >= 10ms, --wait (0, 10m], at most 1000 names")}
			}
			ctx, cancel := context.WithTimeout(common.Context(cmd), wait)
			defer cancel()
			r := &net.Resolver{PreferGo: true}
			// The line on stderr tells a caller (kubeslow's DNS benchmark) that every name has been asked for.
			res := agent.WaitResolve(ctx, r.LookupHost, args, interval, timeout, func() { fmt.Fprintln(streams.ErrOut, agentproto.AskedLine) })
			enc := json.NewEncoder(streams.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		},
	}
	dnsWait.Flags().DurationVar(&interval, agentproto.FlagInterval, 100*time.Millisecond, "time between attempts for each name")
	dnsWait.Flags().DurationVar(&wait, agentproto.FlagWait, time.Minute, "give up on the names still unresolved after this long")
	cmd.AddCommand(dnsWait)
	var lookDur, lookGap time.Duration
	var lookConc int
	var lookEach bool
	lookups := &cobra.Command{
		Use:   "dns-lookups NAME...",
		Short: "Look the names up in turn, one every --interval, with the pod's resolver (Go's, reading /etc/resolv.conf) for --duration; print (JSON) each lookup's start and time and the resolv.conf options",
		Long: `dns-lookups times lookups as an application in the pod makes them: the resolver sends A and AAAA, waits
resolv.conf's timeout (5 s by default) for an answer and retries, so a dropped query shows as a lookup near a
multiple of the timeout. --timeout bounds each lookup past those retries (12s sees two time-outs of 5 s; the
default is 5s). With --each, every lookup is also printed as one JSON line as it returns (name, start, seconds,
error), before the summary: a long run's lookups, as they happen, in the pod's log.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lookDur <= 0 || lookDur > 5*time.Minute || lookConc < 1 || lookConc > 4096 || lookGap < time.Millisecond || len(args) > 100 {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--duration (0, 5m], --concurrency 1..4096, --interval >= 1ms, at most 100 names")}
			}
			conf, _ := os.ReadFile("/etc/resolv.conf") // absent: the defaults, as the resolver itself
			r := &net.Resolver{PreferGo: true}
			out := agent.DNSLookups{Resolver: "go", Conf: agent.ParseResolvConf(conf)}
			enc := json.NewEncoder(streams.Out)
			var each func(agent.LookupSample)
			if lookEach {
				each = func(s agent.LookupSample) { _ = enc.Encode(s) }
			}
			out.Samples, out.Skipped = agent.LookupFor(common.Context(cmd), r.LookupHost, args, lookDur, lookGap, timeout, lookConc, each)
			return enc.Encode(out)
		},
	}
	lookups.Flags().DurationVar(&lookDur, agentproto.FlagDuration, 10*time.Second, "how long to keep starting lookups")
	lookups.Flags().DurationVar(&lookGap, agentproto.FlagInterval, 25*time.Millisecond, "time between lookups (open loop: whether or not the earlier ones returned)")
	lookups.Flags().IntVar(&lookConc, agentproto.FlagConc, 512, "lookups in flight at most (one due beyond is skipped, and counted)")
	lookups.Flags().BoolVar(&lookEach, agentproto.FlagEach, false, "also print each lookup as one JSON line as it returns (name, start, seconds, error), before the summary")
	cmd.AddCommand(lookups)
	var roots agent.NodeNetRoots
	node := &cobra.Command{
		Use:   "node",
		Short: "Print (JSON) this network namespace's interfaces with MTU and kind, conntrack and ARP-table fill, kube-proxy's mode and rule count",
		Long: `node reads what makes a data path slow from the namespace it runs in — a node's from a host-network pod,
a pod's from a pod: interfaces (MTU, kind: vxlan, geneve, bridge...), conntrack entries against nf_conntrack_max,
IPv4 neighbours against gc_thresh3, and kube-proxy's /proxyMode and rule count from its metrics endpoint.
What cannot be read is listed under "unread" with the reason; it is not an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(common.Context(cmd), timeout)
			defer cancel()
			enc := json.NewEncoder(streams.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(agent.ReadNodeNet(ctx, roots))
		},
	}
	node.Flags().StringVar(&roots.Proc, agentproto.FlagProcfs, "/proc", "procfs mount point")
	node.Flags().StringVar(&roots.Sys, agentproto.FlagSysfs, "/sys", "sysfs mount point")
	node.Flags().StringVar(&roots.KubeProxy, agentproto.FlagKubeProxy, "http://127.0.0.1:10249", "kube-proxy's metrics base URL, reachable from host-network pods (empty: skip)")
	cmd.AddCommand(node)
	var dfWait time.Duration
	var dfTries int
	df := &cobra.Command{
		Use:   "df-ping IPV4",
		Short: "Print (JSON) whether ICMP echoes with Don't Fragment set, filling this interface's MTU (and one byte more), reach IPV4; if not, the largest size that does",
		Long: `df-ping sends ICMP echo requests with DF set (IP_PMTUDISC_PROBE) to IPV4: one of exactly the MTU of the
interface its route leaves by (ping -M do -s MTU-28), one a byte larger (which the sender must refuse), and when
the first fails, a binary search for the largest size that passes — the path's MTU as packets see it. ICMP
"fragmentation needed" messages received are listed with the MTU they name. Needs a raw socket (root or
CAP_NET_RAW). --timeout bounds the whole probe.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(common.Context(cmd), timeout)
			defer cancel()
			r, err := agent.RunDFPing(ctx, agent.DFPingOptions{Target: args[0], Wait: dfWait, Tries: dfTries})
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			enc := json.NewEncoder(streams.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		},
	}
	df.Flags().DurationVar(&dfWait, agentproto.FlagWait, 500*time.Millisecond, "how long each echo waits for its reply")
	df.Flags().IntVar(&dfTries, "tries", 2, "attempts at the full size and the smallest before they count as failed")
	cmd.AddCommand(df)
	return cmd
}

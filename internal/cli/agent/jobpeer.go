package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// newJobPeer is `agent job-peer`: a member of kubeslow's job start-up benchmark (case A).
func newJobPeer(streams common.IOStreams) *cobra.Command {
	var c agent.JobPeerConfig
	var listen string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "job-peer NAME...",
		Short: "Be one member of a job whose members find each other by per-pod DNS name: poll every peer's NAME until it resolves and, with --connect, connect to each with exponential back-off; print (one JSON line) when each was done",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.Interval < 10*time.Millisecond || wait <= 0 || wait > 10*time.Minute || len(args) > 1000 || c.Timeout <= 0 ||
				(c.Connect && (c.BackoffBase <= 0 || c.BackoffFactor < 1 || c.BackoffCap < c.BackoffBase)) {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--interval >= 10ms, --wait (0, 10m], --timeout > 0, at most 1000 names; with --connect --backoff-base > 0, --backoff-factor >= 1, --backoff-cap >= base")}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			c.Port, _ = strconv.Atoi(port)
			if c.Host, err = os.Hostname(); err != nil {
				return err
			}
			c.Names = args
			ctx, cancel := context.WithTimeout(common.Context(cmd), wait)
			defer cancel()
			r := &net.Resolver{PreferGo: true}
			d := &net.Dialer{Resolver: r}
			dial := func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
			p := agent.RunJobPeer(ctx, c, ln, r.LookupHost, dial)
			if err := json.NewEncoder(streams.Out).Encode(p); err != nil {
				return err
			}
			// Stay a member (listening, Ready, its name published) until the wait ends or the pod is deleted:
			// slower peers still resolve and connect to it.
			<-ctx.Done()
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, agentproto.FlagListen, "0.0.0.0:7777", "address to accept peers on (its port is the one the back-off client connects to)")
	fl.DurationVar(&c.Interval, agentproto.FlagInterval, 200*time.Millisecond, "time between polls of each peer name")
	fl.DurationVar(&wait, agentproto.FlagWait, 3*time.Minute, "how long to wait for the peers in all (and then to stay up)")
	fl.DurationVar(&c.Timeout, agentproto.FlagTimeout, 2*time.Second, "bound of each lookup and each connect")
	fl.BoolVar(&c.Connect, agentproto.FlagConnect, false, "also connect to every peer, retrying with exponential back-off")
	fl.DurationVar(&c.BackoffBase, agentproto.FlagBackBase, time.Second, "back-off client: first retry delay")
	fl.Float64Var(&c.BackoffFactor, agentproto.FlagBackFactor, 2, "back-off client: delay multiplier per retry")
	fl.DurationVar(&c.BackoffCap, agentproto.FlagBackCap, 5*time.Minute, "back-off client: longest delay")
	return cmd
}

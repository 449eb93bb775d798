package bench

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/check"
	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
)

func newDNS(streams common.IOStreams) *cobra.Command {
	var cf common.ClusterFlags
	var out common.OutputFlag
	o := dnsready.Options{Backoff: dnsready.DefaultBackoff}
	cmd := &cobra.Command{
		Use:   "dns",
		Short: "Per-pod DNS readiness: how long after a pod is Ready its name behind a headless Service resolves, and what a retrying client waits",
		Long: `dns creates a headless Service and a client pod on a real node that starts asking for the per-pod names of
--count peers before they exist (case A's lead did), then the peers. It reports, per peer and as p50/p99/max,
Ready -> resolvable, split into Ready -> EndpointSlice and EndpointSlice -> resolvable, and replays each lag
against an exponential back-off (--backoff-base, --backoff-factor) to show what a retrying client waits.
--image must hold the kubeslow binary at /kubeslow (on the lab: the lab's agent image).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			if o.Count < 1 || o.Count > 100 || o.Interval < 10*time.Millisecond || o.Wait <= 0 || o.Wait > 10*time.Minute ||
				o.Backoff.Base <= 0 || o.Backoff.Factor < 1 {
				return fmt.Errorf("--count 1..100, --interval >= 10ms, --wait (0, 10m], --backoff-base > 0, --backoff-factor >= 1")
			}
			if o.Image = cf.AgentImage(o.Image); o.Image == "" {
				return errNoImage
			}
			return runBenchmark(cmd, streams, &cf, &out, dnsready.New(o), check.DNSRules())
		},
	}
	cf.Add(cmd)
	out.Add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.Image, "image", "", "agent image with /kubeslow (default on the lab: "+lab.AgentImage+")")
	fl.IntVar(&o.Count, "count", 5, "peer pods, each with a per-pod DNS name")
	fl.DurationVar(&o.Interval, "interval", 100*time.Millisecond, "how often the client asks for each name")
	fl.DurationVar(&o.Wait, "wait", 2*time.Minute, "how long the client waits for the names in all")
	fl.DurationVar(&o.Backoff.Base, "backoff-base", time.Second, "replayed client: first retry delay")
	fl.Float64Var(&o.Backoff.Factor, "backoff-factor", 2, "replayed client: delay multiplier per retry")
	return cmd
}

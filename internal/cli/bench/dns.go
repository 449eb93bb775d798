package bench

import (
	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
)

func newDNS(streams common.IOStreams) *cobra.Command {
	o := dnsready.DefaultOptions()
	return agentBench(streams, &cobra.Command{
		Use:   "dns",
		Short: "Per-pod DNS readiness: how long after a pod is Ready its name behind a headless Service resolves, and what a retrying client waits",
		Long: `dns creates a headless Service and a client pod on a real node that starts asking for the per-pod names of
--count peers before they exist (case A's lead did), then the peers. It reports, per peer and as p50/p99/max,
Ready -> resolvable, split into Ready -> EndpointSlice and EndpointSlice -> resolvable, and replays each lag
against an exponential back-off (--backoff-base, --backoff-factor) to show what a retrying client waits.
--image must hold the kubeslow binary at /kubeslow (on the lab: the lab's agent image).`,
	}, &o, &o.Image, nil, func() measure.Measurement { return dnsready.New(o) }, dnsready.Rules)
}

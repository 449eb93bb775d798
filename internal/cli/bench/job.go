package bench

import (
	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
)

func newJob(streams common.IOStreams) *cobra.Command {
	o := dnsready.DefaultJobOptions()
	return agentBench(streams, &cobra.Command{
		Use:   "job",
		Short: "Whole-job start-up (case A): an Indexed Job whose members wait for every peer's per-pod DNS name, by phase, with and without a warm-up Service",
		Long: `job creates a headless Service and an Indexed Job of --count members (completions = parallelism) on the
real nodes; each member (the kubeslow image, agent job-peer) polls every peer's per-pod name until it resolves
and, with --connect, connects to every peer's --port retrying with exponential back-off (--backoff-base,
--backoff-factor, --backoff-cap), as a framework's rendezvous client does. It reports, per member and for
the job, Job created -> all Running -> all Ready -> every name resolvable by every member -> every member
connected, with the DNS lag's share (Ready -> resolvable) and the back-off's (resolvable -> connected), and
the per-name lags the DNS rules read. With --warm-up (the default) the run is repeated with an unrelated
Service created first, as case A's report observed, and both are reported (labelled variant=cold and
variant=warm-up). --image must hold the kubeslow binary at /kubeslow (on the lab: the lab's agent image).`,
	}, &o, &o.Image, nil, func() measure.Measurement { return dnsready.NewJob(o) }, dnsready.Rules)
}

package bench

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeslow/kubeslow/internal/bench/netpath"
	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/rule"
)

func newNet(streams common.IOStreams) *cobra.Command {
	o := netpath.DefaultOptions()
	return agentBench(streams, &cobra.Command{
		Use:   "net",
		Short: "Network paths in the cluster: host->host, host->pod, pod->pod (same and other node), pod->Service; HTTP and TCP, ratios to the host",
		Long: `net runs kubeslow agents as pods on two real nodes (host network and pod network), then the same HTTP
benchmark (closed loop, keep-alive and a new connection per request, a 3 KB POST answered by 404) and the TCP
stream and request/response tests on every path, --repeats rounds over the matrix, and reports each path's
median with its min-max and its ratio to host->host. A pod path more than 10% below the host (k8s-netperf's
tolerance) is a finding, named with what the agents saw on the nodes and in the pod: overlay devices and MTUs,
kube-proxy's mode and rule count, conntrack and ARP-table fill. --image must hold the kubeslow binary at
/kubeslow (on the lab: the lab's agent image).`,
	}, &o, &o.Image, o.FromFlags, func() measure.Measurement { return netpath.New(o) }, netpath.Rules)
}

// agentOptions are the options of a benchmark whose pods run kubeslow: they own their flags and ranges.
type agentOptions interface {
	AddFlags(*pflag.FlagSet)
	Validate() error
}

// agentBench completes cmd as a benchmark whose pods run the kubeslow binary from --image (into *image; the
// lab's agent image by default): the cluster and output flags, --image and o's own flags; when run, the output
// format, then prepare (nil for none: what the options read back from the parsed flags), o's ranges and the
// image are checked before build's measurement runs.
func agentBench(streams common.IOStreams, cmd *cobra.Command, o agentOptions, image *string, prepare func(*pflag.FlagSet) error, build func() measure.Measurement, rules func() []rule.Rule) *cobra.Command {
	var cf common.ClusterFlags
	var out common.OutputFlag
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.Validate(); err != nil {
			return err
		}
		if prepare != nil {
			if err := prepare(cmd.Flags()); err != nil {
				return err
			}
		}
		if err := o.Validate(); err != nil {
			return err
		}
		if *image = cf.AgentImage(*image); *image == "" {
			return errNoImage
		}
		return runBenchmark(cmd, streams, &cf, &out, build(), rules())
	}
	cf.Add(cmd)
	out.Add(cmd)
	cmd.Flags().StringVar(image, "image", "", "agent image with /kubeslow (default on the lab: "+lab.AgentImage+")")
	o.AddFlags(cmd.Flags())
	return cmd
}

// errNoImage: the in-cluster benchmarks run kubeslow in pods, from an image with the binary.
var errNoImage = errors.New("--image: an image with the kubeslow binary at /kubeslow (build it from this repository)")

func newMTU(streams common.IOStreams) *cobra.Command {
	o := &netpath.MTUOptions{}
	return agentBench(streams, &cobra.Command{
		Use:   "mtu",
		Short: "MTUs along the pod path against the uplink minus the overlay's overhead, and a DF-set probe between pods on two nodes",
		Long: `mtu runs kubeslow agents on two real nodes (host network and pod network) and compares the MTUs along the pod
path — the pod's eth0, the CNI bridge (cni0), the overlay device (flannel.1, vxlan/geneve/ipip/wireguard) and the
node's uplink (its default route's interface) — with the uplink's MTU minus the overlay's overhead (VXLAN 50,
IP-in-IP 20, WireGuard 60). From the pod on the first node it sends ICMP echoes with DF set to the pod on the
second: one filling the pod's MTU (ping -M do -s MTU-28), one a byte larger, and when the first fails the largest
size that crosses; the nodes' /proc/net/snmp (IP FragFails, ICMP destination-unreachable sent) is read before and
after. A link above what the path carries, or a path narrower than the pods' MTU, is KS-NET-MTU.`,
	}, o, &o.Image, nil, func() measure.Measurement { return netpath.NewMTU(*o) }, netpath.MTURules)
}

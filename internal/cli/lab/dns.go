package lab

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/lab"
)

// dnsChange is what `lab dns` changes in the running DNS Deployment: its placement ("" unchanged) and its
// CoreDNS containers' CPU limit (nil unchanged, zero none).
type dnsChange struct {
	placement string
	cpuLimit  *resource.Quantity
}

// parseDNSChange reads `lab dns`'s flags, with whether each was given: at least one, a placement lab up
// knows, a CPU limit that is a quantity (empty or 0: none).
func parseDNSChange(setPlacement bool, placement string, setLimit bool, limit string) (dnsChange, error) {
	var ch dnsChange
	if !setPlacement && !setLimit {
		return ch, errors.New("nothing to change: give --placement, --cpu-limit or both")
	}
	if setPlacement {
		if placement != lab.DNSSpread && placement != lab.DNSPacked {
			return ch, fmt.Errorf("--placement %q: want %s or %s", placement, lab.DNSSpread, lab.DNSPacked)
		}
		ch.placement = placement
	}
	if setLimit {
		q := resource.Quantity{}
		if limit != "" {
			var err error
			if q, err = resource.ParseQuantity(limit); err != nil || q.Sign() < 0 {
				return ch, fmt.Errorf("--cpu-limit %q: want a CPU quantity (e.g. 20m; empty or 0: no limit)", limit)
			}
		}
		ch.cpuLimit = &q
	}
	return ch, nil
}

// apply makes the change, one rollout per part (the Deployment recreates its pods each time), each waited
// for until every replica is Ready and published.
func (ch dnsChange) apply(ctx context.Context, c kubernetes.Interface, progress lab.Progress) error {
	if ch.placement != "" {
		progress("DNS Deployment: placement %s", ch.placement)
		if err := lab.SetDNSPlacement(ctx, c, ch.placement); err != nil {
			return err
		}
	}
	if ch.cpuLimit != nil {
		limit := "none"
		if !ch.cpuLimit.IsZero() {
			limit = ch.cpuLimit.String()
		}
		progress("DNS Deployment: CPU limit %s", limit)
		if err := lab.SetDNSCPULimit(ctx, c, *ch.cpuLimit); err != nil {
			return err
		}
	}
	return nil
}

// newDNS is `lab dns`: the running lab's DNS Deployment changed in place, e.g. to apply KS-DNS-HOTSPOT's
// remediation (spread the replicas) between two runs and see the finding clear, or to put CoreDNS under a CPU
// limit (KS-SYSTEM-THROTTLED) without a new `lab up`. The lab's saved configuration keeps what `lab up` was
// given.
func newDNS(streams common.IOStreams) *cobra.Command {
	var placement, cpuLimit string
	cmd := &cobra.Command{
		Use:   "dns",
		Short: "Change the running lab's DNS Deployment (lab up --dns-replicas): its placement and CoreDNS's CPU limit; waits until the new replicas serve",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			ch, err := parseDNSChange(fl.Changed("placement"), placement, fl.Changed("cpu-limit"), cpuLimit)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			d, err := lab.DefaultDirs()
			if err != nil {
				return err
			}
			c, err := lab.AdminClient(d)
			if err != nil {
				return err
			}
			return ch.apply(common.Context(cmd), c, progress(streams))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&placement, "placement", "", lab.DNSSpread+" (topology spread on kubernetes.io/hostname) or "+lab.DNSPacked+" (every replica on "+lab.RealNodeName(1)+")")
	fl.StringVar(&cpuLimit, "cpu-limit", "", "the CoreDNS containers' CPU limit (e.g. 20m; empty or 0: none)")
	return cmd
}

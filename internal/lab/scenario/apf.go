package scenario

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubeslow/kubeslow/internal/lab"
)

// The APF scenarios' noisy client: APFStormClients clients of the noisy ServiceAccount LIST the 3,000 Events
// every APFStormInterval (the list storm's user agent), in a priority level of 1 share (~3 seats).
const (
	APFStormProcess  = "storm-apf"
	APFStormClients  = 40
	APFStormInterval = "200ms"
	// APFQueueLength is apf-queue-full's queue: a few requests wait, the rest of a burst is rejected.
	APFQueueLength = 2
)

func apfScenario(name, desc string, level lab.APFLevel) Scenario {
	return Scenario{Name: name, Layouts: bothLayouts, Case: "B", Description: desc,
		Configure: func(*lab.Config) {},
		Start: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			if err := seedStormEvents(ctx, d, progress); err != nil {
				return err
			}
			if err := lab.StartNoisyClient(ctx, d, level); err != nil {
				return err
			}
			progress("ServiceAccount default/%s in priority level %s (FlowSchema %s)", lab.NoisyServiceAccount, lab.SmallPriorityLevel, lab.NoisyFlowSchema)
			return lab.StartLabProcess(d, APFStormProcess, []string{c.AgentBinary, "lab", "storm", "list-events", "--kubeconfig", d.NoisyKubeconfig(),
				"--clients", fmt.Sprint(APFStormClients), "--interval", APFStormInterval, "--user-agent", ListStormUserAgent, "--seed-events", "0", "--duration", "30m"})
		},
		Stop: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			return errors.Join(stopProcess(APFStormProcess)(ctx, d, c, progress), lab.StopNoisyClient(ctx, d))
		},
		Expect: []string{"KS-API-THROTTLED"}}
}

func apfScenarios() []Scenario {
	return []Scenario{
		apfScenario("apf-reject", fmt.Sprintf("a FlowSchema puts every request of ServiceAccount default/%s into priority level %s: 1 share of "+
			"the server's concurrency (~3 seats), nothing lent or borrowed, no queue (Reject); %d of its clients LIST 3,000 Events every %s: "+
			"API Priority and Fairness rejects what does not fit (429)", lab.NoisyServiceAccount, lab.SmallPriorityLevel, APFStormClients, APFStormInterval),
			lab.APFLevel{NominalShares: 1, Reject: true}),
		apfScenario("apf-queue-full", fmt.Sprintf("as apf-reject, but priority level %s queues what does not fit, in one queue of %d "+
			"(limitResponse Queue: queues 1, handSize 1, queueLengthLimit %d): API Priority and Fairness rejects what overflows the queue (429, queue-full)",
			lab.SmallPriorityLevel, APFQueueLength, APFQueueLength),
			lab.APFLevel{NominalShares: 1, QueueLength: APFQueueLength}),
	}
}

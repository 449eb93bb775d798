package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/kubeslow/kubeslow/internal/lab"
)

// The admission webhook scenarios' webhooks: one that answers every pod create after SlowWebhookDelay (a bucket
// of the apiserver's webhook histogram above KS-API-WEBHOOK's 0.5 s, so its p99 is read in (0.5, 1] s), and
// one that never answers, each call waiting out HungWebhookTimeout and failing open.
var (
	SlowWebhook = lab.WebhookSpec{Config: "kubeslow-lab-slow-webhook", Name: "slow.webhook.lab.kubeslow.dev",
		Delay: SlowWebhookDelay, TimeoutSeconds: 10}
	HungWebhook = lab.WebhookSpec{Config: "kubeslow-lab-hung-webhook", Name: "hung.webhook.lab.kubeslow.dev",
		Mutating: true, Hang: true, TimeoutSeconds: HungWebhookTimeout}
)

// SlowWebhookDelay and HungWebhookTimeout (seconds) are the two webhooks' waits per pod create.
const (
	SlowWebhookDelay   = 800 * time.Millisecond
	HungWebhookTimeout = 2
)

func webhookScenario(name, desc string, w lab.WebhookSpec) Scenario {
	return Scenario{Name: name, Layouts: bothLayouts, Case: "E", Description: desc,
		Configure: func(*lab.Config) {},
		Start: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			return lab.StartWebhook(ctx, d, c.AgentBinary, w, progress)
		},
		Stop: func(ctx context.Context, d lab.Dirs, _ *lab.Config, progress lab.Progress) error {
			if err := lab.StopWebhook(ctx, d, w); err != nil {
				return err
			}
			progress("admission webhook %s removed and its server stopped", w.Name)
			return nil
		},
		Expect: []string{"KS-API-WEBHOOK", "KS-POD-CREATE"}}
}

func webhookScenarios() []Scenario {
	return []Scenario{
		webhookScenario("slow-webhook", fmt.Sprintf("a validating admission webhook (%s, failurePolicy Ignore) on every pod create outside kube-system "+
			"whose server answers each after %s: creates wait for it, while the apiserver's SLI latency, which leaves webhooks out, stays low",
			SlowWebhook.Name, SlowWebhookDelay), SlowWebhook),
		webhookScenario("webhook-timeout", fmt.Sprintf("a mutating admission webhook (%s, failurePolicy Ignore, timeoutSeconds %d) on every pod create "+
			"outside kube-system whose server accepts each call and never answers (as a backend that is down or firewalled from the control "+
			"plane looks to the apiserver): each create waits out the timeout, then the webhook fails open", HungWebhook.Name, HungWebhookTimeout), HungWebhook),
	}
}

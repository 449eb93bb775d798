package apislo_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/apislo/apislotest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
)

// TestRecordedConflictStorm: the lab's recorded conflict storm (real apiserver scrapes) is one KS-API-409
// finding, on Calico's IPAM blocks.
func TestRecordedConflictStorm(t *testing.T) {
	fs, _ := rule.Evaluate(ruletest.Report(nil, apislotest.Recorded(t)), apislo.Rules())
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	if len(fs) != 1 || fs[0].ID != "KS-API-409" || fs[0].Evidence[0].Labels["resource"] != "ipamblocks" {
		t.Fatalf("findings %v: %+v", ids, fs)
	}
}

// TestWebhookFinding: KS-API-WEBHOOK names the webhook by the kind its configuration has (the apiserver's "admit"
// is a mutating webhook), its calls, and those that failed open; a webhook that only answered slowly says no
// failure, and a fast one beside it is not named.
func TestWebhookFinding(t *testing.T) {
	for _, c := range []struct {
		w    apislotest.Webhook
		want []string
		not  string
	}{
		{apislotest.Webhook{Name: "inject.example.com", Type: "admit", Calls: 120, FailOpen: 120, Seconds: 2.01},
			[]string{"admission webhook inject.example.com (mutating)", "over 120 calls, 120 of them failed", "> 0.5 s"}, ""},
		{apislotest.Webhook{Name: "slow.example.com", Type: "validating", Calls: 60, Seconds: 0.8},
			[]string{"admission webhook slow.example.com (validating)", "over 60 calls:"}, "failed"},
	} {
		srv := apislotest.With(func(a *apislotest.Server) { a.Webhooks = append(a.Webhooks, c.w) })
		fs, _ := rule.Evaluate(ruletest.Report(nil, srv.Result(t)), apislo.Rules())
		if len(fs) != 1 || fs[0].ID != "KS-API-WEBHOOK" {
			t.Fatalf("%s: findings %+v", c.w.Name, fs)
		}
		for _, w := range c.want {
			if !strings.Contains(fs[0].Summary, w) {
				t.Errorf("%s: summary %q lacks %q", c.w.Name, fs[0].Summary, w)
			}
		}
		if c.not != "" && strings.Contains(fs[0].Summary, c.not) {
			t.Errorf("%s: summary %q says %q", c.w.Name, fs[0].Summary, c.not)
		}
		if ev := fs[0].Evidence[0]; ev.Labels["name"] != c.w.Name || ev.Bounds == nil {
			t.Errorf("%s: evidence %+v: want the webhook's p99 with its bucket", c.w.Name, ev)
		}
	}
}

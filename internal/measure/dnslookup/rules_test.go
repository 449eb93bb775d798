package dnslookup_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/dnslookup"
	"github.com/kubeslow/kubeslow/internal/measure/dnslookup/dnslookuptest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
)

// TestFiveSeconds: KS-DNS-5S fires on two mechanisms (one UDP/53 packet in two dropped; 5% loss on the DNS
// Service's path) and stays quiet on a healthy cluster, on a slow server whose lookups are slow but not near
// 5 s, and on a single retried lookup.
func TestFiveSeconds(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape dnslookuptest.Shape
		fire  bool
		share string
	}{
		{"nth drop", dnslookuptest.NthDrop, true, "50%"},
		{"netem loss", dnslookuptest.Loss, true, "10%"},
		{"healthy", dnslookuptest.Healthy, false, ""},
		{"slow server", dnslookuptest.SlowServer, false, ""},
		{"one retry", dnslookuptest.OneRetry, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, evals := rule.Evaluate(ruletest.Report(nil, c.shape.Result()), dnslookup.Rules())
			if (len(fs) == 1) != c.fire {
				t.Fatalf("findings %+v evals %+v", fs, evals)
			}
			if !c.fire {
				return
			}
			s := fs[0].Summary
			if !strings.HasPrefix(s, c.share+" of ") || !strings.Contains(s, "kubernetes#56903") || !strings.Contains(s, "musl") {
				t.Fatalf("summary %q", s)
			}
			t.Log(s)
		})
	}
}

// TestLibcAdvice: the fix named follows what the pods' resolv.conf shows.
func TestLibcAdvice(t *testing.T) {
	for opts, want := range map[string]string{
		"ndots:5":                       "glibc clients can add single-request-reopen",
		"ndots:5 single-request-reopen": "it helps glibc clients only",
		"use-vc":                        "the loss is not the UDP race",
	} {
		if got := dnslookup.LibcAdvice("go", strings.Fields(opts)); !strings.Contains(got, want) {
			t.Errorf("%s: %q", opts, got)
		}
	}
}

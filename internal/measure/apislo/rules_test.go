package apislo_test

import (
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

package check

import (
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// ipamResources are the API resources CNI plugins keep their IP allocation in (Calico's IPAM blocks,
// affinities and handles; Whereabouts' IP pools). A 409 storm on them and a slow sandbox phase together
// are case E.
var ipamResources = []string{"ipamblocks", "blockaffinities", "ipamhandles", "ippools", "ipamconfigs"}

func isIPAMResource(r string) bool {
	for _, x := range ipamResources {
		if r == x {
			return true
		}
	}
	return strings.Contains(r, "ipam")
}

// CombinedRules read several measurements at once and name a cause none of them names alone.
func CombinedRules() []Rule {
	return []Rule{{
		ID: "KS-CNI-IPAM", Title: "CNI IP allocation contention slows pod start-up", Severity: result.SeverityError, Cases: []string{"E"},
		When:  Condition{Metric: apiConflicts, Op: ">", Value: 60, Unit: "per_minute"},
		Reads: []Metric{podsTailShare, podsTailMean, podsNodeRatio},
		Needs: []string{podstartup.Name},
		Source: "case E (Calico IPAM): 409 Conflicts above one per second on an IPAM resource while the pod sandbox phase " +
			"(where the CNI allocates the IP) holds the slow start-ups (KS-POD-PHASE or KS-POD-NODE on sandbox)",
		Summary: "{{.value}} 409 Conflicts on {{.resource}} while pods wait {{.sandbox}} in the sandbox phase: CNI plugins race to allocate IPs from shared blocks, retry, and each retry loads the apiserver further",
		Remediation: "Stop the race: serialise IPAM per node (Calico's IPAM lock / strict affinity), give each node its own larger block (Calico blockSize), " +
			"size the control plane for the churn, and reduce pod churn; confirm the writers with `kubeslow audit` on the audit log.",
		Match: cniIPAMMatch,
	}}
}

// sandboxWait is how long pods wait in the sandbox phase when that phase is what makes start-ups slow: the
// tail's mean there when it holds the tail (KS-POD-PHASE's threshold, above the timestamps' precision), or
// the slowest outlier node's median (KS-POD-NODE on sandbox); 0 when neither.
func sandboxWait(r *result.Report) float64 {
	sandbox := 0.0
	phase, node := podPhaseRule(), podNodeRule()
	sh, mean := podsTailShare.In(r, map[string]string{"phase": "sandbox"}), podsTailMean.In(r, map[string]string{"phase": "sandbox"})
	if sh != nil && mean != nil && phase.When.Holds(sh.Value) && mean.Value >= timestampPrecision {
		sandbox = mean.Value
	}
	for _, h := range node.Match(r, node) {
		if h.Vars["phase"] != "sandbox" {
			continue
		}
		if p50 := podsNodeP50.In(r, map[string]string{"node": h.Vars["node"]}); p50 != nil && p50.Value > sandbox {
			sandbox = p50.Value
		}
	}
	return sandbox
}

func cniIPAMMatch(r *result.Report, rule Rule) []Hit {
	sandbox := sandboxWait(r)
	if sandbox == 0 {
		return nil
	}
	var hits []Hit
	for _, h := range rule.Crossing(r) {
		if !isIPAMResource(h.Vars["resource"]) {
			continue
		}
		h.Evidence = append(h.Evidence, result.Evidence{Name: "sandbox_seconds", Value: sandbox, Unit: "seconds", Labels: map[string]string{"phase": "sandbox"}, Result: podstartup.Name})
		h.Vars["sandbox"] = result.FormatQuantity(sandbox, "seconds")
		hits = append(hits, h)
	}
	return hits
}

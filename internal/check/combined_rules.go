package check

import (
	"fmt"
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/report"
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
		Needs: []string{podstartup.Name, apislo.Name},
		Threshold: result.Threshold{Op: ">", Value: 60, Unit: "per_minute",
			Source: "case E (Calico IPAM): 409 Conflicts above one per second on an IPAM resource while the pod sandbox phase (where the CNI allocates the IP) holds the slow start-ups (KS-POD-PHASE or KS-POD-NODE on sandbox)"},
		Summary: "{{.conflicts}} 409 Conflicts on {{.resource}} while pods wait {{.sandbox}} in the sandbox phase: CNI plugins race to allocate IPs from shared blocks, retry, and each retry loads the apiserver further",
		Remediation: "Stop the race: serialise IPAM per node (Calico's IPAM lock / strict affinity), give each node its own larger block (Calico blockSize), " +
			"size the control plane for the churn, and reduce pod churn; confirm the writers with `kubeslow audit` on the audit log.",
		Match: cniIPAMMatch,
	}}
}

func cniIPAMMatch(r *result.Report) []Hit {
	ps := r.Result(podstartup.Name)
	sandbox := 0.0
	// The sandbox phase holds the tail …
	if sh, mean := ps.Metric("tail_phase_share", map[string]string{"phase": "sandbox"}), ps.Metric("tail_phase_mean", map[string]string{"phase": "sandbox"}); sh != nil && mean != nil &&
		sh.Value > tailShareMin && mean.Value >= timestampPrecision {
		sandbox = mean.Value
	}
	// … or is what makes an outlier node slow.
	for _, m := range ps.Metrics {
		if m.Name == "node_outlier_sli_p50" && m.Labels["phase"] == "sandbox" && m.Value > sandbox {
			sandbox = m.Value
		}
	}
	if sandbox == 0 {
		return nil
	}
	var hits []Hit
	for _, m := range r.Result(apislo.Name).Metrics {
		if m.Name != "conflicts_per_minute" || m.Value <= 60 || !isIPAMResource(m.Labels["resource"]) {
			continue
		}
		hits = append(hits, Hit{
			Evidence: []result.Evidence{evidenceOf(m, apislo.Name),
				{Name: "sandbox_seconds", Value: sandbox, Unit: "seconds", Labels: map[string]string{"phase": "sandbox"}, Result: podstartup.Name}},
			Vars: map[string]string{"conflicts": fmt.Sprintf("%s/min", report.FormatValue(m.Value)), "resource": m.Labels["resource"],
				"sandbox": report.FormatValue(sandbox) + " s"},
		})
	}
	return hits
}

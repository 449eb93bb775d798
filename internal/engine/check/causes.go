package check

import "github.com/kubeslow/kubeslow/internal/rule"

// causes are the causal links between rules of different measurements: each symptom's rule and the rules
// whose cause, when they fire in the same report, is its cause too, most direct first (rule.Evaluate names
// the first that fired). A measurement's own links stay in its rules (KS-POD-EVENTS under the slow-start
// findings); these cross measurements, so they are kept in one place, where the chain reads as a whole:
// etcd's disk → the apiserver's latency → slow pod creates → the start-up SLO missed.
//
// One link depends on the numbers, not only on which rules fired, so it is not here: CPU starvation before an
// outage. Where the node agent saw kube-apiserver or etcd waiting for a CPU most of their time in the window of
// an outage, the runner (internal/engine/runner, starvationFirst) puts KS-CP-SATURATED (or -API) first and
// KS-ETCD-STALL, KS-APISERVER-UNREACHABLE and KS-API-LATENCY under it; a stall without that wait (a stopped
// process, a blocked disk) stays the cause, with the findings measured through it under it.
var causes = map[string][]string{
	"KS-API-LATENCY":      {"KS-ETCD-STALL", "KS-ETCD-FSYNC", "KS-DISK-SYNC", "KS-ETCD-COMMIT", "KS-ETCD-NOSPACE", "KS-CP-SATURATED", "KS-CP-SATURATED-API"},
	"KS-API-LIST-LATENCY": {"KS-API-LIST-BYTES", "KS-AUDIT-LIST", "KS-CP-SATURATED", "KS-CP-SATURATED-API"},
	// A slow webhook holds creates without slowing the SLI latency (KS-API-LATENCY leaves its time out).
	"KS-POD-CREATE": {"KS-ETCD-STALL", "KS-API-WEBHOOK", "KS-API-LATENCY", "KS-API-THROTTLED", "KS-CP-SATURATED", "KS-CP-SATURATED-API", "KS-ETCD-FSYNC"},
	// A slow start: what held the slow pods (their Events), then a node or its CNI, then the control plane.
	"KS-POD-SLO": {"KS-POD-EVENTS", "KS-CNI-IPAM", "KS-POD-NODE", "KS-CHURN-DISK-KNEE", "KS-CHURN-DISK-SLOW", "KS-NODE-PAUSE-REMOTE",
		"KS-NODE-PULL-QUEUE", "KS-NODE-START-OUTLIER", "KS-NODE-RUNTIME-OUTLIER", "KS-POD-CREATE", "KS-API-LATENCY", "KS-CP-SATURATED", "KS-CP-SATURATED-API"},
	"KS-POD-PHASE": {"KS-CNI-IPAM", "KS-API-LATENCY"},
	"KS-POD-STUCK": {"KS-NODE-001"},
	// Lookups that wait out the resolver's time-out: the conntrack race, or a full conntrack table.
	"KS-DNS-5S": {"KS-DNS-CONNTRACK-RACE", "KS-NODE-CONNTRACK-DROP"},
	// Lost SYNs: a full conntrack table, or a full neighbour table, drops them on the node.
	"KS-POD-CONNECT-SLOW": {"KS-NODE-CONNTRACK-DROP", "KS-NODE-NEIGH-OVERFLOW"},
	"KS-POD-NODE":         {"KS-NODE-START-OUTLIER", "KS-NODE-RUNTIME-OUTLIER", "KS-NODE-PULL-QUEUE", "KS-NODE-DISK-SYNC", "KS-NODE-PAUSE-REMOTE"},
}

// linkCauses adds the cross-measurement causes to the rules' own (ExplainedBy), after them.
func linkCauses(rules []rule.Rule) []rule.Rule {
	for i := range rules {
		for _, c := range causes[rules[i].ID] {
			if !has(rules[i].ExplainedBy, c) {
				rules[i].ExplainedBy = append(rules[i].ExplainedBy, c)
			}
		}
	}
	return rules
}

func has(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

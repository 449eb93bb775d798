package rbac

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRoles: two ClusterRoles that parse as RBAC objects; every rule carries its reasons; the read-only role
// grants no write verb and includes /metrics and nodes (outside `view`); the benchmarks' role holds the
// writes (and nothing the first already grants).
func TestRoles(t *testing.T) {
	ro, bench := Needs()
	var b strings.Builder
	if err := Write(&b, ro, bench); err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(b.String(), "---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents", len(docs))
	}
	var roles []rbacv1.ClusterRole
	for _, d := range docs {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(d), &r); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		roles = append(roles, r)
		// A comment line before every rule.
		for _, l := range strings.Split(d, "\n") {
			if strings.HasPrefix(l, "- ") && !strings.Contains(d[:strings.Index(d, l)], "#") {
				t.Errorf("rule without a reason: %s", l)
			}
		}
	}
	if roles[0].Name != ReadOnlyRole || roles[1].Name != BenchmarksRole {
		t.Fatalf("names %s, %s", roles[0].Name, roles[1].Name)
	}
	has := func(r rbacv1.ClusterRole, what, verb string) bool {
		for _, rule := range r.Rules {
			for _, x := range append(rule.Resources, rule.NonResourceURLs...) {
				if x == what {
					for _, v := range rule.Verbs {
						if v == verb {
							return true
						}
					}
				}
			}
		}
		return false
	}
	for _, rule := range roles[0].Rules {
		for _, v := range rule.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("read-only role grants %s on %v%v", v, rule.Resources, rule.NonResourceURLs)
			}
		}
	}
	if !has(roles[0], "/metrics", "get") || !has(roles[0], "nodes", "list") || !has(roles[0], "events", "list") {
		t.Errorf("read-only role lacks /metrics, nodes or events:\n%s", docs[0])
	}
	// What a check reads only where granted (Optional) is printed too: a user holding these roles misses
	// nothing (the APF queue snapshot of controlplane.api), said optional in its reason.
	if !has(roles[0], "/debug/api_priority_and_fairness/dump_requests", "get") || !strings.Contains(docs[0], "controlplane.api: optional") {
		t.Errorf("read-only role lacks the optional APF dump:\n%s", docs[0])
	}
	if !has(roles[1], "namespaces", "create") || !has(roles[1], "pods", "create") || has(roles[1], "nodes", "list") {
		t.Errorf("benchmarks role:\n%s", docs[1])
	}
}

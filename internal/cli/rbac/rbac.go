// Package rbac is `kubeslow rbac`: the ClusterRoles a user needs to run kubeslow, each rule with its reason.
package rbac

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
)

// Role names.
const (
	ReadOnlyRole   = "kubeslow-read-only"
	BenchmarksRole = "kubeslow-benchmarks"
)

// NewCommand returns `kubeslow rbac`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "rbac",
		Short: "Print the ClusterRoles kubeslow needs: the read-only checks, and separately what the benchmarks add",
		Long: `rbac prints two ClusterRoles as YAML, each rule with the checks that need it and why:
` + ReadOnlyRole + ` for ` + "`kubeslow run --read-only`" + ` (reads only; nodes, events and the apiserver's /metrics are
outside the built-in view role), and ` + BenchmarksRole + `, what the benchmarks add (their own namespace, pods,
Services, and the cleanup of what a run created). Bind them cluster-wide (a run's namespace is new each time):

  kubeslow rbac | kubectl apply -f -
  kubectl create clusterrolebinding kubeslow-read-only --clusterrole ` + ReadOnlyRole + ` --user NAME

A run checks these permissions first and says which checks it will skip.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ro, bench := Needs()
			return Write(streams.Out, ro, bench)
		},
	}
}

// Need is one permission and who needs it.
type Need struct {
	By string
	measure.Permission
}

// Needs lists the permissions of the read-only checks (with the cluster discovery's) and, separately, what
// the benchmarks add (with the run's own namespace and cleanup): NeedsOf every measurement's Spec.
func Needs() (readOnly, benchmarks []Need) { return NeedsOf(catalogue.Specs()) }

// NeedsOf is Needs with specs as the measurements: a read-only Spec's permissions go to the read-only role, a
// benchmark's (those of `kubeslow run` and of the benches alike) to the benchmarks' role.
func NeedsOf(specs []measure.Spec) (readOnly, benchmarks []Need) {
	for _, p := range runner.DiscoveryPermissions {
		readOnly = append(readOnly, Need{"discovery", p})
	}
	for _, s := range specs {
		for _, p := range s.Permissions {
			if s.Kind == measure.ReadOnly {
				readOnly = append(readOnly, Need{s.Name, p})
			} else {
				benchmarks = append(benchmarks, Need{s.Name, p})
			}
		}
	}
	for _, p := range runner.BenchmarkPermissions {
		benchmarks = append(benchmarks, Need{"run", p})
	}
	// The node tier (the agent on the control-plane nodes) is deployed by a run that is not --read-only.
	for _, p := range cpnode.Permissions() {
		benchmarks = append(benchmarks, Need{"node tier", p})
	}
	return readOnly, benchmarks
}

// Write renders the two ClusterRoles; a benchmark permission the read-only role already grants is left out
// of the second.
func Write(w io.Writer, readOnly, benchmarks []Need) error {
	granted := map[string]bool{}
	for _, n := range readOnly {
		for _, v := range n.Verbs {
			granted[key(n.Permission)+" "+v] = true
		}
	}
	var extra []Need
	for _, n := range benchmarks {
		var verbs []string
		for _, v := range n.Verbs {
			if !granted[key(n.Permission)+" "+v] {
				verbs = append(verbs, v)
			}
		}
		if len(verbs) > 0 {
			n.Verbs = verbs
			extra = append(extra, n)
		}
	}
	var b strings.Builder
	role(&b, ReadOnlyRole, "kubeslow's read-only checks (`kubeslow run --read-only`): nothing is created", readOnly)
	b.WriteString("---\n")
	role(&b, BenchmarksRole, "what kubeslow's benchmarks add to "+ReadOnlyRole+" (`kubeslow run`, `kubeslow bench …`)", extra)
	_, err := io.WriteString(w, b.String())
	return err
}

func key(p measure.Permission) string {
	if p.NonResourceURL != "" {
		return "url " + p.NonResourceURL
	}
	return "res " + p.Group + "/" + p.Resource
}

// role writes one ClusterRole: one rule per resource (or URL) with the union of its verbs, preceded by a
// comment line per need.
func role(b *strings.Builder, name, what string, needs []Need) {
	type rule struct {
		p     measure.Permission
		verbs map[string]bool
		why   []string
	}
	rules := map[string]*rule{}
	var order []string
	for _, n := range needs {
		k := key(n.Permission)
		r := rules[k]
		if r == nil {
			r = &rule{p: n.Permission, verbs: map[string]bool{}}
			rules[k] = r
			order = append(order, k)
		}
		for _, v := range n.Verbs {
			r.verbs[v] = true
		}
		why := n.By + ": " + n.Reason + " (" + strings.Join(n.Verbs, ", ") + ")"
		if !contains(r.why, why) {
			r.why = append(r.why, why)
		}
	}
	sort.Strings(order)
	fmt.Fprintf(b, "# %s\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: %s\nrules:\n", what, name)
	for _, k := range order {
		r := rules[k]
		for _, w := range r.why {
			fmt.Fprintf(b, "# %s\n", w)
		}
		verbs := make([]string, 0, len(r.verbs))
		for v := range r.verbs {
			verbs = append(verbs, fmt.Sprintf("%q", v))
		}
		sort.Strings(verbs)
		if r.p.NonResourceURL != "" {
			fmt.Fprintf(b, "- nonResourceURLs: [%q]\n  verbs: [%s]\n", r.p.NonResourceURL, strings.Join(verbs, ", "))
			continue
		}
		fmt.Fprintf(b, "- apiGroups: [%q]\n  resources: [%q]\n  verbs: [%s]\n", r.p.Group, r.p.Resource, strings.Join(verbs, ", "))
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

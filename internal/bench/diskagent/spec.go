package diskagent

import (
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
)

// Spec declares `kubeslow bench disk --node` (disk.fdatasync in an agent pod), a bench: its command builds it
// from its flags. Its rules are the local bench's (internal/measure/disk), on the same result.
var Spec = measure.Spec{
	Name: disk.BenchName, Bench: true, Rules: disk.Rules,
	Kind: measure.Benchmark, // it creates a pod
	New:  func(measure.Options) measure.Measurement { return &Bench{Recipe: diskprobe.EtcdRecipe} },
	Permissions: []measure.Permission{
		{Verbs: []string{"get"}, Resource: "nodes", Reason: "the node named by --node"},
		{Verbs: []string{"create", "delete", "get"}, Resource: "pods", Reason: "the agent pod that runs the recipe on the node"},
		{Verbs: []string{"get"}, Resource: "pods/log", Reason: "the agent's report"},
	},
}

// Spec implements measure.Declared.
func (*Bench) Spec() measure.Spec { return Spec }

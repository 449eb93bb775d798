package dnsready

import (
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// TestJobLeadFirst: with LeadFirst (the default) the Job starts with its lead alone, completions still every
// member; without it every member starts at once.
func TestJobLeadFirst(t *testing.T) {
	env := &measure.Env{Namespace: "ns", RunID: "r1"}
	for _, lead := range []bool{true, false} {
		o := DefaultJobOptions()
		o.Image, o.Count, o.LeadFirst = "img", 6, lead
		j := NewJob(o).job(env, "job-a", []string{"n1"}, agentproto.JobPeer{})
		want := int32(6)
		if lead {
			want = 1
		}
		if *j.Spec.Parallelism != want || *j.Spec.Completions != 6 {
			t.Errorf("lead first %v: parallelism %d completions %d, want %d and 6", lead, *j.Spec.Parallelism, *j.Spec.Completions, want)
		}
	}
	if !DefaultJobOptions().LeadFirst {
		t.Error("lead first is not the default (case A's order)")
	}
}

package measure_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	agentimage "github.com/kubeslow/kubeslow/internal/source/agent/image"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestGapSource: the control-plane signals keep their source whatever the node tier's reason, the node tier's
// reason (as cpnode writes it) goes under the node tier or, when it lacks the image, the agent image; a skip is
// keyed by what it lacks.
func TestGapSource(t *testing.T) {
	noCP := &cpnode.Unreachable{Reason: cpnode.NoControlPlaneNodes, Detail: "none of the 51 nodes is labelled", Fix: "read the API tier"}
	noImage := &cpnode.Unreachable{Reason: cpnode.NoImage, Detail: agentimage.NoImage}

	k := measure.GapSource(result.GapEntry{Result: "etcd.health", Status: result.StatusSkip, OutOfReach: ptr(cpnode.OutOfReach(measure.OutOfReachEtcd, noCP))})
	if k.Source != measure.SourceEtcd || k.Fix != measure.FixEtcd || !strings.HasPrefix(k.Reason, measure.WhyEtcdNotGiven) || strings.Contains(k.Reason, "51 nodes") {
		t.Errorf("etcd: %+v", k)
	}
	if k.Via == nil || k.Via.Source != measure.SourceNodeTier || k.Via.Reason != "no control-plane node: none of the 51 nodes is labelled" || k.Via.Fix != "read the API tier" {
		t.Errorf("etcd's node tier: %+v", k.Via)
	}
	k = measure.GapSource(result.GapEntry{Result: "api.audit", OutOfReach: ptr(cpnode.OutOfReach(measure.OutOfReachAudit, noImage))})
	if k.Source != measure.SourceAudit || k.Via == nil || k.Via.Source != measure.SourceAgentImage || k.Via.Fix != measure.FixAgentImage ||
		strings.Contains(k.Reason, "kubeslow image push") {
		t.Errorf("audit without an image: %+v %+v", k, k.Via)
	}
	// An entry built without its Source (controlplane.usage's own, from the node tier's reason alone) is
	// known by its signal.
	bare := result.OutOfReach{Signal: measure.OutOfReachComponentCPU.Signal, Why: cpnode.Why(noCP), Fix: measure.FixComponentCPU}
	if k = measure.GapSource(result.GapEntry{OutOfReach: &bare}); k.Source != measure.SourceComponentCPU || k.Reason == "" || k.Via == nil {
		t.Errorf("component CPU: %+v", k)
	}
	for reason, want := range map[string]string{
		agentimage.NoImage + " (the lab's is used with --lab)":                                                 measure.SourceAgentImage,
		"needs an image with the kubeslow binary at /kubeslow (--image; the lab's is used with --lab)":         measure.SourceAgentImage,
		"no real node (simulated nodes have no kubelet)":                                                       measure.SourceRealNodes,
		"no Ready, schedulable real node (kwok's simulated nodes run no resolver)":                             measure.SourceRealNodes,
		"no permission to create pods (the benchmark's pods); `kubeslow rbac` prints the roles kubeslow needs": measure.SourcePermissions + ":no permission to create pods",
		"time budget of 10m0s used up":                                                                         measure.SourceBudget,
		"something nobody planned for":                                                                         "reason:something nobody planned for",
	} {
		if k := measure.GapSource(result.GapEntry{Status: result.StatusSkip, Reason: reason}); k.Source != want || k.Title == "" || k.Reason == "" {
			t.Errorf("%q: %+v, want source %s", reason, k, want)
		}
	}
	cores := result.Absence{Metric: "cpu_saturation", Series: "capacity of the control-plane nodes",
		Reason: "the cores kube-apiserver and etcd may use are unknown (no node labelled node-role.kubernetes.io/control-plane: a managed control plane); no saturation ratio"}
	if k := measure.GapSource(result.GapEntry{Result: "controlplane.usage", Absence: &cores}); k.Source != measure.SourceComponentCPU {
		t.Errorf("absent cores: %+v", k)
	}
}

func TestSplitNodeTier(t *testing.T) {
	own, tier, fix := measure.SplitNodeTier(cpnode.OutOfReach(measure.OutOfReachEtcd, &cpnode.Unreachable{Reason: cpnode.Forbidden, Detail: "nodes is forbidden", Fix: "grant list nodes"}).Why)
	if own != measure.WhyEtcdNotGiven || tier != "forbidden: nodes is forbidden" || fix != "grant list nodes" {
		t.Errorf("split: %q | %q | %q", own, tier, fix)
	}
	if own, tier, _ := measure.SplitNodeTier("audit off"); own != "audit off" || tier != "" {
		t.Errorf("no node tier: %q %q", own, tier)
	}
}

func ptr[T any](v T) *T { return &v }

package nodeagent

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestDaemonSet(t *testing.T) {
	m := New(DefaultOptions("img:1"))
	ds := m.DaemonSet("ks-run", "r1")
	if ds.Labels[kube.RunLabel] != "r1" || ds.Spec.Template.Labels[kube.RunLabel] != "r1" || ds.Namespace != "ks-run" {
		t.Errorf("run labels: %v / %v", ds.Labels, ds.Spec.Template.Labels)
	}
	ps := ds.Spec.Template.Spec
	if len(ps.Tolerations) != 1 || ps.Tolerations[0].Operator != corev1.TolerationOpExists || ps.Tolerations[0].Key != "" {
		t.Errorf("must tolerate every taint: %+v", ps.Tolerations)
	}
	if !ps.HostNetwork || ps.HostPID || ps.HostIPC {
		t.Errorf("host namespaces: network %v pid %v ipc %v", ps.HostNetwork, ps.HostPID, ps.HostIPC)
	}
	c := ps.Containers[0]
	for _, vm := range c.VolumeMounts {
		if strings.HasPrefix(vm.MountPath, hostRoot) != vm.ReadOnly {
			t.Errorf("host mount %s read-only=%v", vm.MountPath, vm.ReadOnly)
		}
	}
	for _, v := range ps.Volumes {
		if v.HostPath != nil && v.HostPath.Path != "/proc" && v.HostPath.Path != "/sys" && v.HostPath.Path != "/dev/kmsg" {
			t.Errorf("unexpected host path %s", v.HostPath.Path)
		}
	}
	if c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("unbounded: %+v", c.Resources)
	}
	terms := ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if e := terms[0].MatchExpressions[0]; e.Key != kube.SimulatedNodeLabel || e.Operator != corev1.NodeSelectorOpNotIn {
		t.Errorf("simulated nodes not kept off: %+v", e)
	}
	if got := strings.Join(c.ReadinessProbe.Exec.Command, " "); got != "/kubeslow agent exists /ready" {
		t.Errorf("readiness %q", got)
	}
	if got := strings.Join(c.Args, " "); !strings.Contains(got, "--path.procfs /host/proc") || !strings.Contains(got, "--kubelet-dir /probe") {
		t.Errorf("args %q", got)
	}
}

func TestAnalyzeFailures(t *testing.T) {
	res := Analyze(nil, map[string]string{"n1": "agent x not Ready (ErrImagePull)"})
	if res.Status != result.StatusError || !strings.Contains(res.Reason, "1 of 1") {
		t.Errorf("no report at all: %s %q", res.Status, res.Reason)
	}
	res = Analyze([]agent.NodeHost{{Node: "n2", Net: &agent.NodeNet{Neighbours: 5, NeighThresh2: 512, NeighThresh3: 1024, ConntrackEntries: -1}}},
		map[string]string{"n1": "x"})
	if res.Status != result.StatusPass || res.Metric(MetricNodesReported, nil).Value != 1 || res.Metric(MetricNodesFailed, nil).Value != 1 {
		t.Errorf("partial: %+v", res)
	}
	if m := res.Metric(MetricNeighbourUsage, map[string]string{"node": "n2"}); m == nil || m.Value != 5.0/1024 {
		t.Errorf("neighbour usage %+v", m)
	}
}

// TestRunOptions: in a run the agents watch the run's observation window, never less than the sweep's 2 s
// nor more than the agent accepts (1 minute), and the DaemonSet passes that watch to the agent.
func TestRunOptions(t *testing.T) {
	for _, c := range []struct{ run, want time.Duration }{
		{0, 2 * time.Second}, {time.Second, 2 * time.Second}, {20 * time.Second, 20 * time.Second},
		{60 * time.Second, time.Minute}, {5 * time.Minute, time.Minute},
	} {
		m := New(RunOptions(measure.Options{Image: "img:1", Window: c.run}))
		if m.Window() != c.want {
			t.Errorf("run window %s: agents watch %s, want %s", c.run, m.Window(), c.want)
		}
		args := strings.Join(m.DaemonSet("ns", "r").Spec.Template.Spec.Containers[0].Args, " ")
		if !strings.Contains(args, "--window "+c.want.String()) {
			t.Errorf("run window %s: agent args %q lack --window %s", c.run, args, c.want)
		}
	}
}

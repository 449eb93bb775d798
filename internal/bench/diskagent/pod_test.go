package diskagent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// TestPodLeastPrivilege: the agent pod mounts only the directory (read-write) and, for the sampler, the
// host's /proc read-only; no capabilities, no privilege, no host namespaces; pinned to the node; the run's
// labels (its cleanup) and the role.
func TestPodLeastPrivilege(t *testing.T) {
	for _, proc := range []bool{false, true} {
		p := PodSpec{Namespace: "ns", RunID: "r1", Name: "x", Node: "n1", Image: "img", Role: SamplerRole, HostDir: "/var/lib/containerd", Proc: proc,
			Args: []string{"agent", "disk-sample"}}.Pod()
		if p.Spec.NodeName != "n1" || p.Spec.RestartPolicy != corev1.RestartPolicyNever || p.Labels[kube.RunLabel] != "r1" || p.Labels[RoleLabel] != SamplerRole {
			t.Errorf("placement or labels: %+v %+v", p.Spec.NodeName, p.Labels)
		}
		if p.Spec.HostNetwork || p.Spec.HostPID || p.Spec.HostIPC || *p.Spec.AutomountServiceAccountToken {
			t.Error("a host namespace or a token")
		}
		c := p.Spec.Containers[0]
		sc := c.SecurityContext
		if sc.Privileged != nil && *sc.Privileged || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem ||
			len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
			t.Errorf("security context %+v", sc)
		}
		want := map[string]bool{"/host/var/lib/containerd": false}
		if proc {
			want["/host/proc"] = true
		}
		if len(c.VolumeMounts) != len(want) || len(p.Spec.Volumes) != len(want) {
			t.Fatalf("mounts %+v", c.VolumeMounts)
		}
		for _, m := range c.VolumeMounts {
			ro, ok := want[m.MountPath]
			if !ok || m.ReadOnly != ro {
				t.Errorf("mount %+v", m)
			}
		}
		for _, v := range p.Spec.Volumes {
			if v.HostPath == nil || (v.HostPath.Path != "/var/lib/containerd" && v.HostPath.Path != "/proc") {
				t.Errorf("volume %+v", v)
			}
		}
		if c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Error("no limits")
		}
	}
}

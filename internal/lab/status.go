package lab

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// Status describes a lab for `lab status`.
type Status struct {
	Up         bool      `json:"up"`
	StateDir   string    `json:"stateDir"`
	Kubeconfig string    `json:"kubeconfig,omitempty"`
	APIServer  string    `json:"apiServer,omitempty"`
	AuditLog   string    `json:"auditLog,omitempty"`
	Etcd       string    `json:"etcdEndpoint,omitempty"`
	EtcdData   string    `json:"etcdStorage,omitempty"`
	Started    time.Time `json:"started,omitzero"`
	Scenario   string    `json:"scenario,omitempty"`
	// Layout is where the control plane runs (LayoutManaged or LayoutKubeadm); Manifests is the kubeadm
	// layout's static-pod manifests directory.
	Layout     string            `json:"layout,omitempty"`
	Manifests  string            `json:"manifests,omitempty"`
	Components []ComponentStatus `json:"components"`
	Nodes      []NodeStatus      `json:"nodes,omitempty"`
	// NodesError says why nodes could not be listed; LeasesError why their leases could not.
	NodesError  string `json:"nodesError,omitempty"`
	LeasesError string `json:"leasesError,omitempty"`
	// Registry is the lab registry's host:port (plain HTTP, reachable from the host and the real nodes'
	// containerd), when the lab has real nodes.
	Registry string `json:"registry,omitempty"`
}

// ComponentStatus is one lab process.
type ComponentStatus struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Running bool   `json:"running"`
	Version string `json:"version,omitempty"`
	Log     string `json:"log"`
}

// NodeStatus is one node as the apiserver sees it.
type NodeStatus struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // "kwok", "real" or "control-plane"
	Ready   bool   `json:"ready"`
	Kubelet string `json:"kubeletVersion"`
	Runtime string `json:"containerRuntime"`
	// Lease is the node's heartbeat Lease in kube-node-lease (nil: the node holds none).
	Lease *NodeLease `json:"lease,omitempty"`
}

// NodeLease is a node's Lease as the node lifecycle controller reads it: who renews it, when it was last
// renewed, and for how long a renewal counts.
type NodeLease struct {
	Holder  string    `json:"holder"`
	Renewed time.Time `json:"renewTime,omitzero"`
	// DurationSeconds is how long a renewal counts; RenewedAgoSeconds how long ago the last one was, when
	// `lab status` looked.
	DurationSeconds   float64 `json:"durationSeconds"`
	RenewedAgoSeconds float64 `json:"renewedAgoSeconds"`
}

// Expired reports whether the lease was last renewed longer than its duration ago (or never).
func (l *NodeLease) Expired() bool {
	return l.Renewed.IsZero() || l.RenewedAgoSeconds > l.DurationSeconds
}

// GetStatus reads the lab's records and, if the apiserver answers, its nodes.
func GetStatus(ctx context.Context, d Dirs) (*Status, error) {
	s := &Status{StateDir: d.State}
	st, err := d.loadState()
	if err != nil {
		return s, nil //nolint:nilerr // no state: the lab is down
	}
	s.Kubeconfig, s.APIServer, s.AuditLog, s.Etcd = d.AdminKubeconfig(), APIServerURL(), d.AuditLog(), EtcdEndpoint()
	s.EtcdData, s.Started, s.Scenario = st.Config.Etcd.String(), st.Started, st.Config.Scenario
	s.Layout = st.Config.LayoutName()
	if st.Config.Kubeadm() {
		s.Manifests = ManifestsDir(d)
	}
	if st.Config.RealNodes > 0 {
		s.Registry = RegistryHost()
	}
	recs, err := d.procs().All()
	if err != nil {
		return nil, err
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	up := len(recs) > 0
	for _, r := range recs {
		alive := r.Alive()
		up = up && alive
		s.Components = append(s.Components, ComponentStatus{Name: r.Name, PID: r.PID, Running: alive, Version: st.Versions[r.Name], Log: r.Log})
	}
	if st.Config.Kubeadm() && up {
		// The static pods: not lab records, found by PID through the control-plane node's pod cgroups.
		for _, name := range staticPodComponents {
			pid, err := ControlPlanePID(d, name)
			logs, _ := filepath.Glob(filepath.Join(controlPlaneNode.dir(d), "pod-logs", "kube-system_"+name+"-"+ControlPlaneNodeName+"_*", name, "*.log"))
			sort.Strings(logs)
			cs := ComponentStatus{Name: name + " (static pod)", PID: pid, Running: err == nil, Version: st.Versions[name]}
			if len(logs) > 0 {
				cs.Log = logs[len(logs)-1]
			}
			up = up && cs.Running
			s.Components = append(s.Components, cs)
		}
	}
	s.Up = up
	if !up {
		return s, nil
	}
	c, err := AdminClient(d)
	if err != nil {
		s.NodesError = err.Error()
		return s, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		s.NodesError = fmt.Sprintf("listing nodes: %v", err)
		return s, nil
	}
	leases := map[string]*NodeLease{}
	if ll, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{}); err != nil {
		s.LeasesError = fmt.Sprintf("listing leases in %s: %v", corev1.NamespaceNodeLease, err)
	} else {
		now := time.Now()
		for i := range ll.Items {
			leases[ll.Items[i].Name] = nodeLease(&ll.Items[i], now)
		}
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		kind := "real"
		if kube.IsSimulated(n) {
			kind = "kwok"
		} else if n.Name == ControlPlaneNodeName {
			kind = "control-plane"
		}
		s.Nodes = append(s.Nodes, NodeStatus{Name: n.Name, Kind: kind, Ready: kube.NodeReady(n),
			Kubelet: n.Status.NodeInfo.KubeletVersion, Runtime: n.Status.NodeInfo.ContainerRuntimeVersion, Lease: leases[n.Name]})
	}
	return s, nil
}

func nodeLease(l *coordinationv1.Lease, now time.Time) *NodeLease {
	nl := &NodeLease{}
	if l.Spec.HolderIdentity != nil {
		nl.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseDurationSeconds != nil {
		nl.DurationSeconds = float64(*l.Spec.LeaseDurationSeconds)
	}
	if l.Spec.RenewTime != nil {
		nl.Renewed = l.Spec.RenewTime.Time
		nl.RenewedAgoSeconds = now.Sub(nl.Renewed).Seconds()
	}
	return nl
}

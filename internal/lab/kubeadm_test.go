package lab

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// flagValues maps each --flag=value of argv to its value.
func flagValues(argv []string) map[string]string {
	out := map[string]string{}
	for _, a := range argv {
		if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok && strings.HasPrefix(a, "--") {
			out[k] = v
		}
	}
	return out
}

func kubeadmTestConfig() Config {
	return Config{Layout: LayoutKubeadm, Nodes: 2, RealNodes: 1, Etcd: EtcdStorage{Kind: "tmpfs"}, AgentBinary: "/usr/local/bin/kubeslow"}
}

// TestStaticPodManifests: the four static pods are kubeadm's shape (kube-system, component= and
// tier=control-plane labels, host network, system-node-critical, requests without limits), with the flags
// kubeadm writes (cmd/kubeadm/app/phases/etcd/local.go getEtcdCommand; controlplane/manifests.go for the
// controller-manager's and scheduler's 127.0.0.1 bind and leader election), and every file a flag names is
// inside a hostPath volume mounted at the same path, writable only where the component writes.
func TestStaticPodManifests(t *testing.T) {
	d := Dirs{Cache: "/cache", State: "/state"}
	c := kubeadmTestConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	files, err := manifestFiles(d, &c)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("%d manifests, want 4", len(files))
	}
	pods := map[string]*corev1.Pod{}
	for _, f := range files {
		if filepath.Dir(f.Path) != ManifestsDir(d) {
			t.Errorf("manifest %s outside the manifests directory %s", f.Path, ManifestsDir(d))
		}
		p := &corev1.Pod{}
		if err := yaml.UnmarshalStrict([]byte(f.Data), p); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		pods[p.Name] = p
		if want := filepath.Join(ManifestsDir(d), p.Name+".yaml"); f.Path != want {
			t.Errorf("pod %s in %s, want %s", p.Name, f.Path, want)
		}
	}
	wantCPU := map[string]string{Etcd: "100m", KubeAPIServer: "250m", KubeControllerMgr: "200m", KubeScheduler: "100m"}
	flags := map[string]map[string]string{}
	for _, name := range staticPodComponents {
		p, ok := pods[name]
		if !ok {
			t.Fatalf("no static pod %s", name)
		}
		if p.Kind != "Pod" || p.APIVersion != "v1" || p.Namespace != "kube-system" || p.Labels["component"] != name || p.Labels["tier"] != "control-plane" {
			t.Errorf("%s: kind %s/%s, namespace %q, labels %v", name, p.APIVersion, p.Kind, p.Namespace, p.Labels)
		}
		if !p.Spec.HostNetwork || p.Spec.PriorityClassName != "system-node-critical" || len(p.Spec.Containers) != 1 {
			t.Errorf("%s: hostNetwork %v, priority class %q, %d containers", name, p.Spec.HostNetwork, p.Spec.PriorityClassName, len(p.Spec.Containers))
		}
		ct := p.Spec.Containers[0]
		if ct.Image != staticPodImage(name) || ct.ImagePullPolicy != corev1.PullIfNotPresent || ct.Command[0] != "/usr/local/bin/"+name {
			t.Errorf("%s: image %s (%s), command %v", name, ct.Image, ct.ImagePullPolicy, ct.Command)
		}
		if got := ct.Resources.Requests.Cpu().String(); got != wantCPU[name] || len(ct.Resources.Limits) != 0 {
			t.Errorf("%s: cpu request %s (want %s), limits %v (want none)", name, got, wantCPU[name], ct.Resources.Limits)
		}
		flags[name] = flagValues(ct.Command)
		// Every path a flag names lives in a hostPath volume mounted at that same path.
		for k, v := range flags[name] {
			for _, path := range strings.Split(v, ",") {
				if !strings.HasPrefix(path, d.State+"/") {
					continue
				}
				m := mountOf(p, path)
				if m == nil {
					t.Errorf("%s --%s=%s: no volume mount holds it", name, k, path)
					continue
				}
				writes := (name == Etcd && k == "data-dir") || (name == KubeAPIServer && k == "audit-log-path")
				if m.ReadOnly == writes {
					t.Errorf("%s --%s=%s: mount %s readOnly %v", name, k, path, m.MountPath, m.ReadOnly)
				}
			}
		}
	}
	for comp, want := range map[string]map[string]string{
		Etcd: {"listen-metrics-urls": "http://127.0.0.1:2381", "snapshot-count": "10000", "name": ControlPlaneNodeName,
			"experimental-watch-progress-notify-interval": "5s", "experimental-initial-corrupt-check": "true",
			"initial-cluster": ControlPlaneNodeName + "=http://" + ControlPlaneIP + ":2380", "data-dir": etcdDataDir(d, &c),
			"listen-client-urls": "http://127.0.0.1:2379,http://" + ControlPlaneIP + ":2379"},
		KubeAPIServer: {"audit-policy-file": auditPolicyPath(d), "audit-log-path": d.AuditLog(), "etcd-servers": "http://127.0.0.1:2379",
			"advertise-address": ControlPlaneIP, "secure-port": "6443", "authorization-mode": "Node,RBAC", "enable-admission-plugins": "NodeRestriction"},
		KubeControllerMgr: {"bind-address": "127.0.0.1", "leader-elect": "true", "allocate-node-cidrs": "true", "use-service-account-credentials": "true"},
		KubeScheduler:     {"bind-address": "127.0.0.1", "config": schedulerConfig(d, &c).Path},
	} {
		for k, v := range want {
			if got, ok := flags[comp][k]; !ok || got != v {
				t.Errorf("%s --%s=%q, want %q", comp, k, got, v)
			}
		}
	}
	if !strings.Contains(schedulerConfig(d, &c).Data, "leaderElect: true") {
		t.Errorf("kubeadm's scheduler elects a leader:\n%s", schedulerConfig(d, &c).Data)
	}
	// The managed layout keeps its flags: the components bound to the control-plane address, no leader election.
	m := Config{Nodes: 2, Etcd: EtcdStorage{Kind: "tmpfs"}}
	kcm := flagValues(controllerManagerArgs(d, &m, "kcm"))
	if kcm["bind-address"] != ControlPlaneIP || kcm["leader-elect"] != "false" || flagValues(schedulerArgs(d, &m, "s"))["bind-address"] != ControlPlaneIP {
		t.Errorf("managed layout's kcm flags %v", kcm)
	}
}

// mountOf is the container's volume mount that holds path (at the same path on the host: a hostPath volume).
func mountOf(p *corev1.Pod, path string) *corev1.VolumeMount {
	for i, m := range p.Spec.Containers[0].VolumeMounts {
		for _, v := range p.Spec.Volumes {
			if v.Name != m.Name || v.HostPath == nil || v.HostPath.Path != m.MountPath {
				continue
			}
			if path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/") {
				return &p.Spec.Containers[0].VolumeMounts[i]
			}
		}
	}
	return nil
}

// TestKubeadmPlan: the control-plane node's containerd and kubelet replace the four control-plane processes;
// its kubelet registers tainted and reads the manifests directory; the real nodes follow unchanged.
func TestKubeadmPlan(t *testing.T) {
	d := Dirs{Cache: "/cache", State: "/state"}
	c := kubeadmTestConfig()
	p, err := NewPlan(d, c, planBinaries())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var kubelet *Component
	for _, comp := range p.Components() {
		names = append(names, comp.Name)
		if comp.Name == "lab-control-plane.kubelet" {
			kubelet = comp
		}
		if strings.HasPrefix(comp.Name, "lab-control-plane.") {
			if comp.Namespace != NetNS {
				t.Errorf("%s in namespace %s, want the lab's %s", comp.Name, comp.Namespace, NetNS)
			}
		}
	}
	want := []string{"lab-control-plane.containerd", "lab-control-plane.kubelet", "lab-control-plane.kube-proxy", Kwok, CoreDNS, "registry", "lab-node-1.containerd", "lab-node-1.kubelet", "lab-node-1.kube-proxy"}
	if !slices.Equal(names, want) {
		t.Fatalf("components %v\nwant %v", names, want)
	}
	fl := flagValues(kubelet.Argv)
	if fl["register-with-taints"] != "node-role.kubernetes.io/control-plane:NoSchedule" || fl["hostname-override"] != ControlPlaneNodeName || fl["node-ip"] != ControlPlaneIP {
		t.Errorf("control-plane kubelet flags %v", fl)
	}
	var kubeletConf string
	for _, f := range kubelet.Files {
		if strings.HasSuffix(f.Path, "kubelet-config.yaml") {
			kubeletConf = f.Data
		}
	}
	if !strings.Contains(kubeletConf, "staticPodPath: \""+ManifestsDir(d)+"\"") {
		t.Errorf("kubelet config has no staticPodPath %s:\n%s", ManifestsDir(d), kubeletConf)
	}
	if !strings.Contains(p.Render(), "layout kubeadm") {
		t.Error("the plan does not say its layout")
	}
	// Prometheus scrapes the 127.0.0.1-bound components from inside the lab's namespace.
	c.Prometheus = true
	if conf := prometheusConfig(d, &c); !strings.Contains(conf, `"127.0.0.1:10257"`) || !strings.Contains(conf, `"127.0.0.1:10259"`) {
		t.Errorf("prometheus config does not scrape kcm/scheduler on 127.0.0.1:\n%s", conf)
	}
	// `lab down` with the record: the control-plane node's processes are placed, its containerd last.
	stop := stopOrder(&State{Config: c}, []string{"lab-control-plane.containerd", "lab-control-plane.kubelet", Kwok})
	if !slices.Equal(stop, []string{Kwok, "lab-control-plane.kubelet", "lab-control-plane.containerd"}) {
		t.Errorf("stop order %v", stop)
	}
}

func TestLayoutValidate(t *testing.T) {
	for _, tc := range []struct {
		c  Config
		ok bool
	}{
		{Config{}, true},
		{Config{Layout: LayoutManaged}, true},
		{Config{Layout: LayoutKubeadm, AgentBinary: "/kubeslow"}, true},
		{Config{Layout: LayoutKubeadm}, false},
		{Config{Layout: "k3s"}, false},
	} {
		if err := tc.c.Validate(); (err == nil) != tc.ok {
			t.Errorf("layout %q agent %q: err %v, want ok=%v", tc.c.Layout, tc.c.AgentBinary, err, tc.ok)
		}
	}
	if (&Config{}).LayoutName() != LayoutManaged {
		t.Error("the default layout is managed")
	}
}

package lab

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/lab/images"
)

// The lab's layouts: where its control plane runs.
//
//   - LayoutManaged (the default): etcd, kube-apiserver, kube-controller-manager and kube-scheduler are plain
//     processes in the lab's namespace, outside every node, as on EKS, GKE or AKS: the cluster shows only the
//     apiserver's endpoint.
//   - LayoutKubeadm: a control-plane node (ControlPlaneNodeName, with its own containerd and kubelet in the
//     lab's namespace, at ControlPlaneIP) runs the four as static pods from its manifests directory, with
//     kubeadm's flags, labels, taint and hostPath volumes.
const (
	LayoutManaged = "managed"
	LayoutKubeadm = "kubeadm"
)

// Layouts lists the lab's layouts.
var Layouts = []string{LayoutManaged, LayoutKubeadm}

// LayoutName is c's layout ("" is LayoutManaged).
func (c *Config) LayoutName() string {
	if c.Layout == "" {
		return LayoutManaged
	}
	return c.Layout
}

// Kubeadm reports whether the control plane runs as static pods on a control-plane node.
func (c *Config) Kubeadm() bool { return c.Layout == LayoutKubeadm }

// ControlPlaneNodeName is the kubeadm layout's control-plane Node.
const ControlPlaneNodeName = "lab-control-plane"

// The control-plane role's label and taint, as kubeadm's mark-control-plane phase sets them.
const (
	ControlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"
	// EtcdMetricsPort is kubeadm's --listen-metrics-urls port on 127.0.0.1.
	EtcdMetricsPort = 2381
	// KubeControllerManagerPort and KubeSchedulerPort are the components' secure ports, bound to 127.0.0.1
	// in the kubeadm layout.
	KubeControllerManagerPort = 10257
	KubeSchedulerPort         = 10259
)

// ControlPlaneTaint is the taint kubeadm puts on control-plane nodes.
var ControlPlaneTaint = corev1.Taint{Key: ControlPlaneRoleLabel, Effect: corev1.TaintEffectNoSchedule}

// staticPodImage is the image of a control-plane component in the kubeadm layout: its binary alone, built by
// the lab (like registry.k8s.io/<name>, which kubeadm's manifests name).
func staticPodImage(name string) string { return "kubeslow.local/" + name + ":lab" }

// staticPodBinary is where a control-plane component's binary sits in its image.
func staticPodBinary(name string) string { return "/usr/local/bin/" + name }

// ManifestsDir is the control-plane node's staticPodPath (kubeadm's /etc/kubernetes/manifests).
func ManifestsDir(d Dirs) string { return filepath.Join(controlPlaneNode.dir(d), "manifests") }

// staticPodComponents are the kubeadm layout's static pods, in start order.
var staticPodComponents = []string{Etcd, KubeAPIServer, KubeControllerMgr, KubeScheduler}

// staticPodManifests are the four static pods' manifests, by component, for the control-plane node's
// manifests directory.
func staticPodManifests(d Dirs, c *Config) (map[string]*corev1.Pod, error) {
	pki := hostPathVolume("k8s-certs", d.PKIDir(), true)
	conf := hostPathVolume("kubeslow-config", d.ConfDir(), true)
	// The apiserver's audit policy and log: kubeadm's documented way is two hostPath volumes (the policy file
	// read-only, the log directory writable); the lab's log directory holds the audit log and its rotations.
	policy := hostPathVolume("audit", auditPolicyPath(d), true)
	policy.Volume.HostPath.Type = ptr.To(corev1.HostPathFile)
	audit := hostPathVolume("audit-log", filepath.Dir(d.AuditLog()), false)
	audit.Volume.HostPath.Type = ptr.To(corev1.HostPathDirectoryOrCreate)
	data := hostPathVolume("etcd-data", etcdDataDir(d, c), false)
	data.Volume.HostPath.Type = ptr.To(corev1.HostPathDirectoryOrCreate)

	// The image holds the binary at /usr/local/bin/<name> and sets no PATH: the command names it in full.
	cmd := func(argv []string) []string {
		return append([]string{staticPodBinary(filepath.Base(argv[0]))}, argv[1:]...)
	}
	pods := map[string]*corev1.Pod{
		Etcd: staticPod(Etcd, "100m", "100Mi", cmd(kubeadmEtcdArgs(d, c, Etcd)), nil, data),
		KubeAPIServer: staticPod(KubeAPIServer, "250m", "", cmd(apiserverArgs(d, c, KubeAPIServer)),
			&corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: ControlPlaneIP, Path: "/readyz",
				Port: intstr.FromInt32(APIServerPort), Scheme: corev1.URISchemeHTTPS}}, TimeoutSeconds: 15, PeriodSeconds: 1, FailureThreshold: 3},
			pki, policy, audit),
		KubeControllerMgr: staticPod(KubeControllerMgr, "200m", "", cmd(controllerManagerArgs(d, c, KubeControllerMgr)), nil, pki),
		KubeScheduler:     staticPod(KubeScheduler, "100m", "", cmd(schedulerArgs(d, c, KubeScheduler)), nil, pki, conf),
	}
	return pods, nil
}

// mountedVolume is a hostPath volume and where the container sees it (at the same path: a flag that names a
// file reads the same on the host and in the container, as kubeadm's /etc/kubernetes/pki does).
type mountedVolume struct {
	Volume corev1.Volume
	Mount  corev1.VolumeMount
}

func hostPathVolume(name, path string, readOnly bool) mountedVolume {
	return mountedVolume{
		Volume: corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
		Mount:  corev1.VolumeMount{Name: name, MountPath: path, ReadOnly: readOnly},
	}
}

// staticPod is kubeadm's staticpodutil.ComponentPod: kube-system, labels component=<name> and
// tier=control-plane, host network, priority class system-node-critical, the RuntimeDefault seccomp profile,
// and CPU (and for etcd memory) requests with no limits.
func staticPod(name, cpu, memory string, command []string, readiness *corev1.Probe, vols ...mountedVolume) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if memory != "" {
		req[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"component": name, "tier": "control-plane"}},
		Spec: corev1.PodSpec{
			HostNetwork:       true,
			PriorityClassName: "system-node-critical",
			Priority:          ptr.To(int32(2000001000)),
			SecurityContext:   &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: name, Image: staticPodImage(name), ImagePullPolicy: corev1.PullIfNotPresent,
				Command: command, Resources: corev1.ResourceRequirements{Requests: req}, ReadinessProbe: readiness,
			}},
		},
	}
	for _, v := range vols {
		p.Spec.Volumes = append(p.Spec.Volumes, v.Volume)
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v.Mount)
	}
	return p
}

// manifestFiles are the static pods' manifests as files of the control-plane node's manifests directory.
func manifestFiles(d Dirs, c *Config) ([]File, error) {
	pods, err := staticPodManifests(d, c)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, name := range staticPodComponents {
		b, err := yaml.Marshal(pods[name])
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: filepath.Join(ManifestsDir(d), name+".yaml"), Data: string(b), Mode: 0o600})
	}
	return files, nil
}

// kubeadmEtcdArgs are etcd's flags as kubeadm's etcd phase writes them (cmd/kubeadm/app/phases/etcd/local.go,
// getEtcdCommand), for etcd 3.5 (the --experimental- names of the corrupt check and progress notify), except
// that the lab's client and peer URLs stay plain HTTP (the lab's etcd has no certificates in either layout).
func kubeadmEtcdArgs(d Dirs, c *Config, bin string) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d,http://%s:%d", EtcdPort, ControlPlaneIP, EtcdPort)
	peer := fmt.Sprintf("http://%s:%d", ControlPlaneIP, EtcdPeerPort)
	args := []string{bin,
		"--name=" + ControlPlaneNodeName, "--experimental-initial-corrupt-check=true",
		"--listen-client-urls=" + client, "--advertise-client-urls=" + fmt.Sprintf("http://%s:%d", ControlPlaneIP, EtcdPort),
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--data-dir=" + etcdDataDir(d, c),
		"--snapshot-count=10000",
		fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", EtcdMetricsPort),
		"--experimental-watch-progress-notify-interval=5s",
		"--initial-cluster=" + ControlPlaneNodeName + "=" + peer,
		"--log-level=warn",
	}
	if c.EtcdQuotaBytes > 0 {
		args = append(args, "--quota-backend-bytes="+strconv.FormatInt(c.EtcdQuotaBytes, 10))
	}
	return args
}

// kubeadmArgs rewrites the managed layout's kube-controller-manager and kube-scheduler flags as kubeadm has
// them: bound to 127.0.0.1 (the secure ports answer only on the node), with leader election.
func kubeadmArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--bind-address="):
			a = "--bind-address=127.0.0.1"
		case strings.HasPrefix(a, "--leader-elect="):
			a = "--leader-elect=true"
		}
		out = append(out, a)
	}
	return out
}

// componentHealthAddr is where `lab up` and Prometheus reach kube-controller-manager's or kube-scheduler's
// secure port: the control-plane address, or in the kubeadm layout 127.0.0.1 of the lab's namespace (which
// the control-plane node shares).
func componentHealthAddr(c *Config, port int) string {
	if c.Kubeadm() {
		return fmt.Sprintf("127.0.0.1:%d", port)
	}
	return fmt.Sprintf("%s:%d", ControlPlaneIP, port)
}

// kubeadmSteps bring up the kubeadm layout's control plane: the control-plane node's files and images, its
// containerd and its kubelet (whose manifests directory holds the four static pods), then each component's
// health, and the Node registered, labelled, tainted and Ready.
func kubeadmSteps(d Dirs, c *Config, bin func(string) string) ([]Step, error) {
	n := controlPlaneNode
	manifests, err := manifestFiles(d, c)
	if err != nil {
		return nil, err
	}
	archive := controlPlaneImagesDir(d)
	in := func(name string, argv []string, health Check, files ...File) *Component {
		return &Component{Name: n.proc(name), Namespace: n.netns(), Argv: argv, Env: []string{sbinPath}, Health: health, Files: files}
	}
	var imageNames []string
	for _, comp := range staticPodComponents {
		imageNames = append(imageNames, staticPodImage(comp))
	}
	kubeletFiles := append([]File{
		{Path: filepath.Join(n.dir(d), "kubelet-config.yaml"), Data: kubeletConfig(d, c, n), Mode: 0o644},
		{Path: filepath.Join(n.dir(d), "resolv.conf"), Data: "nameserver " + ClusterDNSIP + "\n", Mode: 0o644},
		{Path: auditPolicyPath(d), Data: auditPolicy, Mode: 0o644},
		schedulerConfig(d, c),
	}, manifests[:2]...)
	steps := []Step{
		{Name: n.name(), What: fmt.Sprintf("the control-plane node %s in the lab's namespace %s at %s: its certificates, kubeconfig and directories under %s; "+
			"cgroup %s in every hierarchy; its containerd's root on a tmpfs; images %s, %s and %s (each its binary alone) in an archive under %s (kept there for the next lab)",
			n.name(), NetNS, ControlPlaneIP, n.dir(d), n.cgroupRoot(), strings.Join(imageNames, ", "), PauseImage, AgentImage, archive),
			Do: func(ctx context.Context, u *upRun) error {
				// Before its containerd and kubelet write to the fixed host paths (see hostPathsOwned).
				u.st.HostPaths = missingHostPaths()
				if err := u.d.saveState(u.st); err != nil {
					return err
				}
				if err := nodeFiles(u.d, n); err != nil {
					return fmt.Errorf("files: %w", err)
				}
				if err := os.MkdirAll(ManifestsDir(u.d), 0o700); err != nil {
					return err
				}
				if err := host.EnsureCgroupPath(n.cgroupRoot()); err != nil {
					return fmt.Errorf("cgroups: %w", err)
				}
				// Its containerd's content and snapshots on a tmpfs: importing ~300 MB of images onto the shared
				// disk took 19 s; `lab down` unmounts it with the rest of the state.
				if root := filepath.Join(n.dir(u.d), "containerd", "root"); !host.IsMountpoint(root) {
					if err := os.MkdirAll(root, 0o700); err != nil {
						return err
					}
					if _, err := host.Run(ctx, host.Short, "mount", "-t", "tmpfs", "-o", "mode=0700,size=2g", "kubeslow-cp-containerd", root); err != nil {
						return err
					}
				}
				t := time.Now()
				cached, err := controlPlaneImages(u.d, bin)
				if err != nil {
					return fmt.Errorf("control-plane images: %w", err)
				}
				// The agent and pause images change with the kubeslow binary: written for each lab (the real
				// nodes' images step rewrites the same archive).
				lab, err := buildLabImages(u.d, u.c.AgentBinary, "")
				if err != nil {
					return err
				}
				u.cpImages = []string{cached, lab}
				u.step("control-plane images %s and %s ready in %.1fs", cached, lab, time.Since(t).Seconds())
				return nil
			}},
		{Name: n.proc("containerd"), Component: in("containerd", []string{"/usr/bin/containerd", "--config", filepath.Join(n.dir(d), "containerd", "config.toml")},
			Check{What: "containerd answers on " + n.sock(d), OK: func(ctx context.Context, u *upRun) bool {
				_, err := host.Run(ctx, 5*time.Second, "ctr", "--address", n.sock(u.d), "version")
				return err == nil
			}},
			File{Path: filepath.Join(n.dir(d), "containerd", "config.toml"), Data: containerdConfig(d, &Config{}, n), Mode: 0o644}, // its pods use the host network: the bridge template whatever the lab's CNI
			File{Path: filepath.Join(n.dir(d), "cni", "template.conflist"), Data: cniTemplate(d, n), Mode: 0o644}),
			What: "the control-plane images imported into its k8s.io namespace",
			Do: func(ctx context.Context, u *upRun) error {
				t := time.Now()
				for _, archive := range u.cpImages {
					if err := importImages(ctx, n.sock(u.d), archive); err != nil {
						return fmt.Errorf("images: %w", err)
					}
				}
				u.step("control-plane images imported in %.1fs", time.Since(t).Seconds())
				return nil
			}},
		{Name: n.proc("kubelet"), Component: in("kubelet", []string{bin(Kubelet), "--config=" + filepath.Join(n.dir(d), "kubelet-config.yaml"),
			"--kubeconfig=" + d.componentKubeconfig(n.name()), "--root-dir=" + filepath.Join(n.dir(d), "kubelet"),
			"--hostname-override=" + n.name(), "--node-ip=" + n.ip(), "--node-labels=" + RealNodeLabel + "=" + ControlPlaneNodeLabelValue,
			"--register-with-taints=" + ControlPlaneTaint.ToString()},
			nsGetOK(n.netns(), "http://127.0.0.1:10248/healthz"), kubeletFiles...),
			What: "the kubelet runs the static pods of " + ManifestsDir(d) + " before any apiserver exists, then registers its Node"},
		{Name: Etcd, What: fmt.Sprintf("static pod etcd answers GET %s/health and its metrics on http://127.0.0.1:%d/metrics inside %s", EtcdEndpoint(), EtcdMetricsPort, NetNS),
			Do: func(ctx context.Context, u *upRun) error {
				if err := waitHealthy(ctx, u, Etcd, getOK(EtcdEndpoint()+"/health"), nsGetOK(NetNS, fmt.Sprintf("http://127.0.0.1:%d/metrics", EtcdMetricsPort))); err != nil {
					return err
				}
				if u.c.EtcdWriteIOPS > 0 {
					// The throttle is set on etcd's blkio cgroup (etcd-storage step); the container's process joins it.
					pid, err := ControlPlanePID(u.d, Etcd)
					if err != nil {
						return err
					}
					if err := joinCgroup(host.ProcessCgroup("blkio", Etcd), pid); err != nil {
						return err
					}
					u.step("etcd (pid %d) in the throttled blkio cgroup %s", pid, host.ProcessCgroup("blkio", Etcd))
				}
				return nil
			}},
		{Name: KubeAPIServer, What: "static pod kube-apiserver: GET /readyz with the admin kubeconfig succeeds",
			Do: func(ctx context.Context, u *upRun) error {
				return waitHealthy(ctx, u, KubeAPIServer, Check{What: "/readyz", OK: func(ctx context.Context, u *upRun) bool { return readyz(u.client)(ctx) }})
			}},
		// kubeadm writes all four manifests at once; kube-controller-manager then exits until the apiserver
		// answers and the kubelet restarts it with a growing back-off (10 s, 20 s, ...: 10 s of `lab up` on a
		// loaded machine). Its manifest and the scheduler's follow the apiserver's readiness instead.
		{Name: "control-plane-manifests", What: "the kube-controller-manager and kube-scheduler manifests written to " + ManifestsDir(d) + " (the kubelet watches it)",
			Files: manifests[2:]},
		{Name: KubeControllerMgr, What: fmt.Sprintf("static pod kube-controller-manager: GET https://%s/healthz inside %s answers 200", componentHealthAddr(c, KubeControllerManagerPort), NetNS),
			Do: func(ctx context.Context, u *upRun) error {
				return waitHealthy(ctx, u, KubeControllerMgr, nsGetOK(NetNS, "https://"+componentHealthAddr(u.c, KubeControllerManagerPort)+"/healthz"))
			}},
		{Name: KubeScheduler, What: fmt.Sprintf("static pod kube-scheduler: GET https://%s/readyz inside %s answers 200", componentHealthAddr(c, KubeSchedulerPort), NetNS),
			Do: func(ctx context.Context, u *upRun) error {
				return waitHealthy(ctx, u, KubeScheduler, nsGetOK(NetNS, "https://"+componentHealthAddr(u.c, KubeSchedulerPort)+"/readyz"))
			}},
		// Nothing that follows needs it before lab up's end (nodes, DNS objects and static pods do not; the
		// steps that create pods wait for it): it is waited for beside them.
		{Name: "default-serviceaccount", What: "the default ServiceAccount exists (the control plane is up)", Background: true,
			Do: func(ctx context.Context, u *upRun) error {
				if err := waitDefaultServiceAccount(ctx, u.client); err != nil {
					return err
				}
				u.step("default ServiceAccount present: control plane up")
				return nil
			}},
		// Nothing that follows needs it before lab up's end either (no pod is created until the steps that wait
		// for the background ones; the mirror pods, up to syncFrequency after the Node registered, took 11 s
		// of the run of 2026-11-30's lab up in the foreground).
		{Name: "mark-control-plane", What: fmt.Sprintf("Node %s labelled %s=\"\" and tainted %s (kubeadm's mark-control-plane), Ready, and its four mirror pods Running in kube-system",
			n.name(), ControlPlaneRoleLabel, ControlPlaneTaint.ToString()), Background: true,
			Do: func(ctx context.Context, u *upRun) error {
				if err := markControlPlane(ctx, u); err != nil {
					return err
				}
				if err := waitNodesReady(ctx, u.client, RealNodeLabel+"="+ControlPlaneNodeLabelValue, 1); err != nil {
					return err
				}
				u.step("control-plane node %s Ready", n.name())
				if err := waitMirrorPods(ctx, u); err != nil {
					return err
				}
				u.step("control-plane node %s labelled and tainted; its four mirror pods Running", n.name())
				return nil
			}},
		// kubeadm runs kube-proxy (a DaemonSet) on every node, the control-plane node too: without it a pod
		// there (the DNS probe tolerates every taint) reaches no Service, and kube-dns's ClusterIP above all.
		{Name: n.proc("kube-proxy"), Component: in("kube-proxy", []string{bin(KubeProxy), "--config=" + filepath.Join(n.dir(d), "kube-proxy.yaml")},
			nsGetOK(n.netns(), "http://127.0.0.1:10256/healthz"),
			File{Path: filepath.Join(n.dir(d), "kube-proxy.yaml"), Data: kubeProxyConfig(d, c, n), Mode: 0o644}),
			What: "kube-proxy on the control-plane node, as kubeadm's DaemonSet puts it on every node"},
	}
	return steps, nil
}

// ControlPlaneNodeLabelValue is the control-plane node's RealNodeLabel value (the worker nodes carry "real").
const ControlPlaneNodeLabelValue = "control-plane"

// waitHealthy polls the checks until all pass, failing early with the kubelet's log if the kubelet exits.
func waitHealthy(ctx context.Context, u *upRun, name string, checks ...Check) error {
	kubelet, err := u.d.procs().Read(controlPlaneNode.proc("kubelet"))
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !kubelet.Alive() {
			return false, fmt.Errorf("the control-plane kubelet exited; last lines of %s:\n%s", kubelet.Log, host.Tail(kubelet.Log, 15))
		}
		for _, c := range checks {
			if !c.OK(ctx, u) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the static pod %s: %w (kubelet log %s)", name, err, kubelet.Log)
	}
	u.step("static pod %s healthy", name)
	return nil
}

// markControlPlane labels and taints the control-plane Node, as kubeadm's mark-control-plane phase does
// (the kubelet may not set node-role labels itself: NodeRestriction).
func markControlPlane(ctx context.Context, u *upRun) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := u.client.CoreV1().Nodes().Get(ctx, ControlPlaneNodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not registered yet
		}
		taints := node.Spec.Taints
		has := false
		for _, t := range taints {
			if t.Key == ControlPlaneTaint.Key && t.Effect == ControlPlaneTaint.Effect {
				has = true
			}
		}
		if !has {
			taints = append(taints, ControlPlaneTaint)
		}
		patch := map[string]any{"metadata": map[string]any{"labels": map[string]string{ControlPlaneRoleLabel: ""}}, "spec": map[string]any{"taints": taints}}
		b, err := yaml.Marshal(patch)
		if err != nil {
			return false, err
		}
		js, err := yaml.YAMLToJSON(b)
		if err != nil {
			return false, err
		}
		if _, err := u.client.CoreV1().Nodes().Patch(ctx, ControlPlaneNodeName, types.StrategicMergePatchType, js, metav1.PatchOptions{}); err != nil {
			return false, fmt.Errorf("labelling and tainting %s: %w", ControlPlaneNodeName, err)
		}
		return true, nil
	})
}

// waitMirrorPods waits for the four static pods' mirror pods Running in kube-system.
func waitMirrorPods(ctx context.Context, u *upRun) error {
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		missing = missing[:0]
		for _, comp := range staticPodComponents {
			p, err := u.client.CoreV1().Pods("kube-system").Get(ctx, comp+"-"+ControlPlaneNodeName, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning {
				missing = append(missing, comp)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("mirror pods not Running: %s: %w", strings.Join(missing, ", "), err)
	}
	return nil
}

// ControlPlanePID is the PID of a control-plane component (Etcd, KubeAPIServer, KubeControllerMgr,
// KubeScheduler): in the managed layout its process record; in the kubeadm layout the process of its static
// pod's container, found among the processes of the control-plane node's pod cgroups (the kubelet's
// cgroupRoot) by the program its argv[0] names.
func ControlPlanePID(d Dirs, name string) (int, error) {
	st, err := d.loadState()
	if err != nil {
		return 0, err
	}
	if !st.Config.Kubeadm() {
		p, err := d.procs().Read(name)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return p.PID, nil
	}
	root := host.CgroupRoot()
	if root == "" {
		return 0, fmt.Errorf("%s: no pids or cgroup2 hierarchy to find the static pod's process in", name)
	}
	dir := filepath.Join(root, strings.TrimPrefix(controlPlaneNode.cgroupRoot(), "/"))
	var found []int
	err = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
			return nil //nolint:nilerr // a cgroup removed meanwhile
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			argv0, _, _ := strings.Cut(string(cmd), "\x00")
			if filepath.Base(argv0) == name {
				found = append(found, pid)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	sort.Ints(found)
	if len(found) != 1 {
		return 0, fmt.Errorf("%s: want one process of the static pod under %s, found %d %v", name, dir, len(found), found)
	}
	return found[0], nil
}

// ControlPlaneNodeCgroup is the control-plane node's cgroup, relative to each hierarchy's root: its kubelet's
// --cgroup-root, under which the kubelet makes kubepods.
func ControlPlaneNodeCgroup() string { return controlPlaneNode.cgroupRoot() }

// joinCgroup moves pid into the cgroup dir (creating it).
func joinCgroup(dir string, pid int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("moving pid %d into %s: %w", pid, dir, err)
	}
	return nil
}

// controlPlaneImagesDir holds the kubeadm layout's image archives, in the build cache (they survive `lab down`).
func controlPlaneImagesDir(d Dirs) string { return filepath.Join(d.Cache, "images") }

// controlPlaneImages returns the archive of the kubeadm layout's four component images, written once for a
// given set of binaries (the build cache's): its name is a digest of their paths, sizes and modification times.
func controlPlaneImages(d Dirs, bin func(string) string) (string, error) {
	h := sha256.New()
	var binaries []string
	for _, comp := range staticPodComponents {
		binaries = append(binaries, bin(comp))
	}
	for _, b := range binaries {
		fi, err := os.Stat(b)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", b, fi.Size(), fi.ModTime().UnixNano())
	}
	path := filepath.Join(controlPlaneImagesDir(d), fmt.Sprintf("control-plane-%x.tar", h.Sum(nil)[:8]))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(controlPlaneImagesDir(d), 0o755); err != nil {
		return "", err
	}
	var extra []images.Extra
	for _, comp := range staticPodComponents {
		extra = append(extra, images.Extra{Ref: staticPodImage(comp), Binary: bin(comp), Path: staticPodBinary(comp), Entrypoint: []string{staticPodBinary(comp)}})
	}
	// Older archives (other binaries) are replaced.
	old, _ := filepath.Glob(filepath.Join(controlPlaneImagesDir(d), "control-plane-*.tar"))
	tmp := path + ".tmp"
	// No image of WriteArchive's own binary (refs nil): the four are extras, each with its binary's path.
	if err := images.WriteArchive(tmp, bin(Etcd), nil, extra...); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	for _, o := range old {
		os.Remove(o)
	}
	return path, nil
}

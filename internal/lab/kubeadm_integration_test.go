package lab_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode/cpnodetest"
)

// TestIntegrationKubeadmLayout brings up `lab up --layout kubeadm` with one kwok and one real node and checks,
// against the real components: the control-plane Node is registered, Ready, labelled and tainted as kubeadm
// marks it; the four control-plane components run as static pods whose mirror pods are Running in kube-system
// with kubeadm's component= and tier=control-plane labels; etcd serves its metrics on 127.0.0.1:2381 inside
// the control-plane node's namespace only, and kube-controller-manager and kube-scheduler answer on 127.0.0.1
// only; the audit log named by the apiserver's --audit-log-path grows; `lab status` says the layout; and
// `lab down` leaves nothing, the static pods' processes included.
func TestIntegrationKubeadmLayout(t *testing.T) {
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg := lab.Config{Layout: lab.LayoutKubeadm, Nodes: 1, RealNodes: 1, AgentBinary: labtest.Binary(t), Etcd: lab.EtcdStorage{Kind: "tmpfs"},
		ImagePulls: lab.ImagePullSettings{Serialize: true}}
	start := time.Now()
	rc, down := labtest.Up(t, d, func() error { _, err := lab.Up(ctx, d, cfg, t.Logf); return err })
	downed := false
	defer func() {
		if !downed {
			down()
		}
	}()
	t.Logf("lab up --layout kubeadm (1 kwok, 1 real node) took %s", time.Since(start).Round(100*time.Millisecond))
	c := kubernetes.NewForConfigOrDie(rc)

	node, err := c.CoreV1().Nodes().Get(ctx, lab.ControlPlaneNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("control-plane node: %v", err)
	}
	if v, ok := node.Labels[lab.ControlPlaneRoleLabel]; !ok || v != "" {
		t.Errorf("node %s labels %v: want %s=\"\"", node.Name, node.Labels, lab.ControlPlaneRoleLabel)
	}
	tainted := false
	for _, tn := range node.Spec.Taints {
		tainted = tainted || (tn.Key == lab.ControlPlaneRoleLabel && tn.Effect == corev1.TaintEffectNoSchedule)
	}
	if !tainted {
		t.Errorf("node %s taints %v: want %s:NoSchedule", node.Name, node.Spec.Taints, lab.ControlPlaneRoleLabel)
	}
	ready := false
	for _, cond := range node.Status.Conditions {
		ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
	}
	if !ready || node.Status.NodeInfo.ContainerRuntimeVersion == "" {
		t.Errorf("node %s not Ready (%v) or no runtime (%q)", node.Name, node.Status.Conditions, node.Status.NodeInfo.ContainerRuntimeVersion)
	}

	pods, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "tier=control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	byComponent := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		byComponent[p.Labels["component"]] = p
	}
	for _, comp := range []string{lab.Etcd, lab.KubeAPIServer, lab.KubeControllerMgr, lab.KubeScheduler} {
		p, ok := byComponent[comp]
		switch {
		case !ok:
			t.Errorf("no mirror pod with component=%s,tier=control-plane in kube-system (have %d)", comp, len(pods.Items))
		case p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != lab.ControlPlaneNodeName || !p.Spec.HostNetwork:
			t.Errorf("mirror pod %s: phase %s, node %q, hostNetwork %v", p.Name, p.Status.Phase, p.Spec.NodeName, p.Spec.HostNetwork)
		case p.Annotations[corev1.MirrorPodAnnotationKey] == "":
			t.Errorf("pod %s is not a mirror pod (annotations %v)", p.Name, p.Annotations)
		}
	}

	inNS := func(url string) (string, error) {
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", lab.NetNS, "curl", "-skf", "--max-time", "5", url).CombinedOutput()
		return string(out), err
	}
	metrics, err := inNS(fmt.Sprintf("http://127.0.0.1:%d/metrics", lab.EtcdMetricsPort))
	if err != nil || !strings.Contains(metrics, "etcd_server_has_leader 1") || !strings.Contains(metrics, "etcd_disk_wal_fsync_duration_seconds_bucket") {
		t.Errorf("etcd metrics on 127.0.0.1:%d inside %s: %v (%d bytes, has_leader/wal_fsync missing)", lab.EtcdMetricsPort, lab.NetNS, err, len(metrics))
	}
	for _, port := range []int{lab.KubeControllerManagerPort, lab.KubeSchedulerPort} {
		if out, err := inNS(fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err != nil || strings.TrimSpace(out) != "ok" {
			t.Errorf("127.0.0.1:%d/healthz inside %s: %v %q", port, lab.NetNS, err, out)
		}
	}
	// Bound to 127.0.0.1: the node's address does not answer on those ports.
	for _, port := range []int{lab.EtcdMetricsPort, lab.KubeControllerManagerPort, lab.KubeSchedulerPort} {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", lab.ControlPlaneIP, port), 2*time.Second); err == nil {
			conn.Close()
			t.Errorf("%s:%d answers from the host: want it bound to 127.0.0.1 only", lab.ControlPlaneIP, port)
		}
	}

	// The apiserver's process, found through the control-plane node's pod cgroups, names the audit log.
	pid, err := lab.ControlPlanePID(d, lab.KubeAPIServer)
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "--audit-log-path="+d.AuditLog()) {
		t.Fatalf("kube-apiserver (pid %d) cmdline %q: want --audit-log-path=%s (%v)", pid, strings.ReplaceAll(string(cmdline), "\x00", " "), d.AuditLog(), err)
	}
	fi, err := os.Stat(d.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	before := fi.Size()
	for i := 0; i < 5; i++ {
		if _, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labtest.Eventually(ctx, t, "audit log grows", func() error {
		fi, err := os.Stat(d.AuditLog())
		if err != nil {
			return err
		}
		if fi.Size() <= before {
			return fmt.Errorf("audit log %d bytes, was %d", fi.Size(), before)
		}
		return nil
	})

	st, err := lab.GetStatus(ctx, d)
	if err != nil || st.Layout != lab.LayoutKubeadm || st.Manifests != lab.ManifestsDir(d) || !st.Up {
		t.Errorf("lab status: layout %q manifests %q up %v (%v)", st.Layout, st.Manifests, st.Up, err)
	}
	staticShown := 0
	for _, cs := range st.Components {
		if strings.HasSuffix(cs.Name, " (static pod)") && cs.Running && cs.PID > 0 && cs.Log != "" {
			staticShown++
		}
	}
	if staticShown != 4 {
		t.Errorf("lab status shows %d running static pods with a PID and a log, want 4: %+v", staticShown, st.Components)
	}

	// The node tier: the agent on lab-control-plane finds the four components, scrapes etcd and the scheduler
	// and streams the audit log; the worker's agent claims none of them.
	cpnodetest.Check(t, rc, lab.AgentImage, lab.RealNodeName(1))

	// The static pods' processes are not lab records: check them gone too.
	var static []labtest.Process
	for _, comp := range []string{lab.Etcd, lab.KubeAPIServer, lab.KubeControllerMgr, lab.KubeScheduler} {
		pid, err := lab.ControlPlanePID(d, comp)
		if err != nil {
			t.Fatal(err)
		}
		static = append(static, labtest.Process{Name: comp, PID: pid, StartTick: startTick(t, pid)})
	}
	downed = true
	down()
	labtest.AssertGone(t, d, static)
}

// startTick is field 22 of /proc/<pid>/stat (the process's start time), which tells a process from a later
// one that reuses its PID.
func startTick(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var tick uint64
	if _, err := fmt.Sscan(f[19], &tick); err != nil {
		t.Fatal(err)
	}
	return tick
}

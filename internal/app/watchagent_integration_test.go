package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/watch/install"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationWatchNodeAgent: `kubeslow watch install --node-agent` keeps the node agent running on every
// real node (a DaemonSet that reads its node every --node-agent-every, 10 s here, the least the flag takes) and
// the installed watch reads the agents' newest reports each cycle through its namespaced Role, creating nothing:
//   - nodes.agent passes in the watch's cycles with every real node reported, and on the healthy lab
//     KS-POD-CONNECT-SLOW does not fire;
//   - a fault on a real node the rules were not written on — the first SYN of every connect from lab-node-1 to a
//     server pod dropped (iptables' statistic match in its OUTPUT chain) while a client there connects in a
//     loop — fires KS-POD-CONNECT-SLOW in the watch's /metrics, named on lab-node-1, within two agent reads and
//     two cycles; once the fault is gone it clears;
//   - `kubeslow run --read-only --node-agent NS` reads the same reports;
//   - `watch uninstall` deletes the DaemonSet, its Role and RoleBinding with the rest.
func TestIntegrationWatchNodeAgent(t *testing.T) {
	d, rc := labtest.Shared(t, appLab(t))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := kubernetes.NewForConfigOrDie(rc)
	// The agents read every 10 s (15 s until 2026-11-29): a read of the fault below holds ~9 connects of a
	// second, 4x the rule's 2. A cycle's window is 1 s: nodes.agent reading kept agents only waits it out
	// before it reads their newest reports (a cycle every ~11 s, 15 s at the 5 s window before).
	const ns, every, window = "kubeslow-watch-agent-it", 10 * time.Second, "1s"

	// The fault's server pod on lab-node-2, started while the agents and the watch start (it was created
	// after them until 2026-11-29): a server with no client yet changes nothing the healthy checks read.
	const srvNS, server = "watch-agent-it", "connect-server"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: srvNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, c, srvNS) })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: server, Namespace: srvNS},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: lab.RealNodeName(2)}, TerminationGracePeriodSeconds: ptr.To[int64](1),
			AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{burnContainer("listen", "--listen", ":8080")}}}
	if _, err := c.CoreV1().Pods(srvNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runArgs(t, "watch", "install", "--kubeconfig", d.AdminKubeconfig(), "--image", lab.AgentImage, "--namespace", ns,
		"--interval", "10s", "--window", window, "--for", "1", "--only", nodeagent.Name, "--node-agent", "--node-agent-every", every.String())
	if code != 0 {
		t.Fatalf("watch install --node-agent: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("watch install --node-agent:\n%s", out)
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			runArgs(t, "watch", "uninstall", "--kubeconfig", d.AdminKubeconfig(), "--namespace", ns)
		}
	})
	for _, want := range []string{"created daemonset " + ns + "/" + nodeagent.KeptName, "created role " + ns + "/" + install.NodeAgentRoleName,
		"created rolebinding " + ns + "/" + install.NodeAgentRoleName} {
		if !strings.Contains(out, want) {
			t.Errorf("install's output lacks %q", want)
		}
	}

	// Every kept agent Ready (its first report written) and the watch available.
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, nodeagent.KeptName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		dep, err := c.AppsV1().Deployments(ns).Get(ctx, install.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		s := ds.Status
		return s.DesiredNumberScheduled == 2 && s.NumberReady == 2 && dep.Status.AvailableReplicas == 1, nil
	})
	if err != nil {
		logPods(t, c, ns)
		t.Fatalf("the kept agents (2 real nodes) and the watch not Ready: %v", err)
	}

	scrape := watchScrape(t, c, ns)
	// firing is KS-POD-CONNECT-SLOW's series at 1, and the last scrape.
	firing := func(ctx context.Context) ([]*dto.Metric, map[string]*dto.MetricFamily, error) {
		fams, err := scrape(ctx)
		if err != nil {
			return nil, nil, err
		}
		var on []*dto.Metric
		for _, m := range fams["kubeslow_finding"].GetMetric() {
			if label(m, "id") == "KS-POD-CONNECT-SLOW" && m.GetGauge().GetValue() == 1 {
				on = append(on, m)
			}
		}
		return on, fams, nil
	}
	// A cycle that read both agents' reports: nodes.agent passed with 2 nodes reported.
	var fams map[string]*dto.MetricFamily
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, f, err := firing(ctx)
		if err != nil {
			t.Logf("scrape: %v", err)
			return false, nil
		}
		fams = f
		return sum(fams["kubeslow_measurement_status"], map[string]string{"measurement": nodeagent.Name, "status": string(result.StatusPass)}) == 1 &&
			sum(fams["kubeslow_metric"], map[string]string{"measurement": nodeagent.Name, "name": nodeagent.MetricNodesReported}) == 2, nil
	})
	if err != nil {
		t.Fatalf("no cycle read the kept agents: statuses %v, metrics %v", fams["kubeslow_measurement_status"].GetMetric(), nodesReported(fams))
	}
	if on, _, err := firing(ctx); err != nil || len(on) > 0 {
		t.Fatalf("KS-POD-CONNECT-SLOW firing on the healthy lab (%v): %v", err, on)
	}
	t.Logf("the watch reads the kept agents: %v", nodesReported(fams))
	// `kubeslow run --read-only --node-agent NS` reads the same reports, creating nothing.
	code, out, errOut = runArgs(t, "run", "--kubeconfig", d.AdminKubeconfig(), "--read-only", "--only", nodeagent.Name, "--node-agent", ns,
		"--window", window, "--out-dir", "", "-o", "json")
	if code != 0 {
		t.Fatalf("run --read-only --node-agent: exit %d\n%s", code, errOut)
	}
	var rep result.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("run's report: %v\n%s", err, out)
	}
	if na := find(rep, nodeagent.Name); na == nil || na.Status != result.StatusPass || metric(na, nodeagent.MetricNodesReported, nil) != 2 ||
		!strings.Contains(na.Reason, "read from the node agents kept in "+ns) {
		t.Errorf("run --read-only --node-agent: nodes.agent %+v", na)
	}

	// The fault: the server pod on lab-node-2, a client in lab-node-1's network namespace connecting in a loop,
	// every second SYN to the server dropped on lab-node-1.
	ip := labtest.WaitPodRunning(ctx, t, c, srvNS, server).Status.PodIP
	url := "http://" + ip + ":8080/"
	in := func(ctx context.Context, argv ...string) (string, error) {
		return host.RunIn(ctx, host.Short, nil, lab.RealNodeNetNS(1), argv...)
	}
	labtest.Eventually(ctx, t, "the server answering", func() error { _, err := in(ctx, "curl", "-sf", "-o", "/dev/null", url); return err })
	drop := []string{"OUTPUT", "-p", "tcp", "--syn", "-d", ip + "/32", "--dport", "8080", "-m", "statistic", "--mode", "nth", "--every", "2", "--packet", "0", "-j", "DROP"}
	if out, err := in(ctx, append([]string{"iptables", "-w", "5", "-I"}, drop...)...); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	dropped := true
	undrop := func() {
		if !dropped {
			return
		}
		dropped = false
		if out, err := in(context.Background(), append([]string{"iptables", "-w", "5", "-D"}, drop...)...); err != nil {
			t.Errorf("removing the SYN drop: %v %s", err, out)
		}
	}
	t.Cleanup(undrop)
	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan int, 1)
	go func() {
		n := 0
		for loopCtx.Err() == nil {
			if _, err := in(loopCtx, "curl", "-s", "-o", "/dev/null", "-m", "10", url); err == nil {
				n++
			}
		}
		loopDone <- n
	}()
	connects, looping := 0, true
	stop := func() { // the client's loop ended and waited for, once
		if looping {
			looping = false
			stopLoop()
			connects = <-loopDone
		}
	}
	defer stop()
	began := time.Now()
	var on []*dto.Metric
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*every+2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if on, _, err = firing(ctx); err != nil {
			t.Logf("scrape: %v", err)
			return false, nil
		}
		return len(on) > 0, nil
	})
	if err != nil {
		t.Fatalf("KS-POD-CONNECT-SLOW did not fire in the watch within %s of the SYN drop: %v", 2*every+2*time.Minute, err)
	}
	t.Logf("KS-POD-CONNECT-SLOW fired %s after the SYN drop began: %v", time.Since(began).Round(time.Second), on[0].GetLabel())
	if label(on[0], "node") != lab.RealNodeName(1) {
		t.Errorf("KS-POD-CONNECT-SLOW on node %q, want %s: %v", label(on[0], "node"), lab.RealNodeName(1), on[0].GetLabel())
	}

	// The fault gone: the finding clears. The server's namespace goes meanwhile (the namespace controller
	// takes 5 s or more; the cleanup waits for it to be gone): nothing connects to the server any more.
	undrop()
	stop()
	t.Logf("the client connected %d times", connects)
	if err := c.CoreV1().Namespaces().Delete(ctx, srvNS, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting namespace %s: %v", srvNS, err)
	}
	cleared := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*every+2*time.Minute, true, func(ctx context.Context) (bool, error) {
		on, _, err := firing(ctx)
		return err == nil && len(on) == 0, nil
	})
	if err != nil {
		t.Fatalf("KS-POD-CONNECT-SLOW still firing %s after the SYN drop ended", time.Since(cleared).Round(time.Second))
	}
	t.Logf("KS-POD-CONNECT-SLOW cleared %s after the SYN drop ended", time.Since(cleared).Round(time.Second))

	code, out, errOut = runArgs(t, "watch", "uninstall", "--kubeconfig", d.AdminKubeconfig(), "--namespace", ns)
	uninstalled = true
	if code != 0 {
		t.Fatalf("watch uninstall: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"deleted daemonset " + ns + "/" + nodeagent.KeptName, "deleted role " + ns + "/" + install.NodeAgentRoleName,
		"deleted rolebinding " + ns + "/" + install.NodeAgentRoleName} {
		if !strings.Contains(out, want) {
			t.Errorf("uninstall's output lacks %q:\n%s", want, out)
		}
	}
}

// nodesReported is nodes.agent's nodes_reported series of a scrape, for a message.
func nodesReported(fams map[string]*dto.MetricFamily) string {
	var l []string
	for _, m := range fams["kubeslow_metric"].GetMetric() {
		if label(m, "measurement") == nodeagent.Name && label(m, "name") == nodeagent.MetricNodesReported {
			l = append(l, fmt.Sprintf("%s=%g", nodeagent.MetricNodesReported, m.GetGauge().GetValue()))
		}
	}
	return strings.Join(l, " ")
}

package lab_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/bench/netpath"
	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationRealNodes starts a lab with two real nodes and checks, against the real components: pods
// from the local kubeslow image run on both; pod IPs answer from the host and from the other node; a
// ClusterIP Service answers through kube-proxy; a headless Service's per-pod DNS name resolves inside a pod
// through CoreDNS; an image pulled from the lab registry lands on a node; teardown leaves nothing.
func TestIntegrationRealNodes(t *testing.T) {
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cfg := lab.Config{Nodes: 2, RealNodes: 2, AgentBinary: labtest.Binary(t), Etcd: lab.EtcdStorage{Kind: "tmpfs"},
		ImagePulls: lab.ImagePullSettings{Serialize: true}}
	if _, err := lab.Up(ctx, d, cfg, t.Logf); err != nil {
		t.Fatalf("lab up: %v", err)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = lab.Down(context.Background(), d, t.Logf)
		}
	})
	rc, err := lab.AdminRESTConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(rc)

	// Two web pods, one per real node, each an HTTP server from the kubeslow image (the lab registry's own
	// server: it answers /v2/ with 200), with per-pod DNS names under a headless Service.
	ips := map[string]string{}
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("web-%d", i)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				NodeName: lab.RealNodeName(i), Hostname: name, Subdomain: "web-headless",
				Containers: []corev1.Container{{Name: "web", Image: lab.AgentImage, ImagePullPolicy: corev1.PullNever,
					Args: []string{"lab", "registry-serve", "--addr", ":8080", "--dir", "/tmp/registry"}}},
			},
		}
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-headless", Namespace: "default"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 8080}}}},
	} {
		if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 2; i++ {
		p := labtest.WaitPodRunning(ctx, t, c, "default", fmt.Sprintf("web-%d", i))
		if p.Spec.NodeName != lab.RealNodeName(i) || p.Status.PodIP == "" {
			t.Fatalf("pod %s on %q with IP %q", p.Name, p.Spec.NodeName, p.Status.PodIP)
		}
		ips[p.Name] = p.Status.PodIP
	}

	// Pod IPs from the host (routed through the lab namespace).
	hc := &http.Client{Timeout: 5 * time.Second}
	for name, ip := range ips {
		labtest.Eventually(ctx, t, "host -> "+name, func() error {
			resp, err := hc.Get("http://" + ip + ":8080/v2/")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		})
	}
	// From node 1's namespace to the pod on node 2 (crosses nodes).
	labtest.Eventually(ctx, t, "node 1 -> pod on node 2", func() error {
		out, err := exec.CommandContext(ctx, "nsenter", "--net=/run/netns/"+lab.RealNodeNetNS(1), "--",
			"curl", "-sf", "--max-time", "3", "http://"+ips["web-2"]+":8080/v2/").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	// Inside a pod: the ClusterIP Service by name (CoreDNS + kube-proxy), and the headless per-pod name.
	labtest.Eventually(ctx, t, "pod -> Service by DNS name", func() error {
		out, _, err := labtest.Exec(ctx, rc, c, "default", "web-1", "/kubeslow", "probe", "http", "http://web.default.svc.cluster.local/v2/")
		if err != nil || !strings.HasPrefix(out, "200") {
			return fmt.Errorf("%v: %q", err, out)
		}
		return nil
	})
	labtest.Eventually(ctx, t, "headless per-pod DNS name", func() error {
		out, _, err := labtest.Exec(ctx, rc, c, "default", "web-1", "/kubeslow", "probe", "dns", "web-2.web-headless.default.svc.cluster.local")
		if err != nil || strings.TrimSpace(out) != ips["web-2"] {
			return fmt.Errorf("resolved %q (want %s): %v", out, ips["web-2"], err)
		}
		return nil
	})

	// An image from the lab registry, pulled for real.
	img := lab.RegistryImages()[1].Ref
	pull := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pulled", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: lab.RealNodeName(2), Containers: []corev1.Container{{Name: "c", Image: img, ImagePullPolicy: corev1.PullAlways}}}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pull, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labtest.WaitPodRunning(ctx, t, c, "default", "pulled")
	evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pulled,reason=Pulled"})
	if err != nil || len(evs.Items) == 0 || !strings.Contains(evs.Items[0].Message, "Successfully pulled image") {
		t.Fatalf("no Pulled event for %s: %v %+v", img, err, evs)
	}
	t.Logf("pulled: %s", evs.Items[0].Message)

	// The MTU check on the bridge CNI: every link at 1500, no overlay, the full-size DF probe crosses, no finding.
	rep, err := runner.Execute(ctx, runner.Plan{Target: runner.Target{Config: rc, Name: "lab", Lab: true},
		Measurements: []measure.Measurement{netpath.NewMTU(netpath.MTUOptions{Image: lab.AgentImage})}, Rules: check.Rules(), Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Result(netpath.MTUName); r == nil || r.Status != result.StatusPass {
		t.Fatalf("%s not measured: %+v", netpath.MTUName, r)
	} else {
		for _, m := range r.Metrics {
			switch {
			case m.Name == netpath.MetricMTU && (m.Value != 1500 || m.Labels["role"] == "overlay"):
				t.Errorf("bridge lab: %+v", m)
			case m.Name == netpath.MetricDFShortfall && (m.Value != 0 || m.Labels["path_mtu"] != "1500"):
				t.Errorf("bridge lab: DF probe %+v", m)
			}
		}
	}
	for _, f := range rep.Findings {
		t.Errorf("bridge lab: finding %s: %s", f.ID, f.Summary)
	}

	procs := labtest.Processes(t, d)
	if err := lab.Down(context.Background(), d, t.Logf); err != nil {
		t.Fatalf("lab down: %v", err)
	}
	downed = true
	labtest.AssertGone(t, d, procs)
}

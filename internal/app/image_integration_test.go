package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationImagePushKubeconfigOnly does on the lab what a user does on a real cluster: `kubeslow image
// push` puts the agent image in a registry (the lab's, over plain HTTP from the host), and `kubeslow run`, given
// only the kubeconfig and that image, runs the node agent and the DNS probes from it. The lab's own agent image
// is imported under another name (kubeslow.local/...), so the real node's containerd can only have the pushed
// reference from the registry; the node's status lists it after.
func TestIntegrationImagePushKubeconfigOnly(t *testing.T) {
	// The package's shared lab (appLab): its two real nodes pull the pushed image from its registry.
	cfg := appLab(t)
	d, rc := labtest.Shared(t, cfg)
	t.Setenv("KUBESLOW_STATE_DIR", d.State)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin := labtest.Binary(t)

	code, out, errOut := runArgs(t, "lab", "status", "-o", "json")
	var st lab.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Registry != lab.RegistryHost() {
		t.Fatalf("lab status: exit %d, registry %q\n%s\n%s", code, st.Registry, out, errOut)
	}

	began := time.Now()
	code, out, errOut = runArgs(t, "image", "push", st.Registry+"/tools/kubeslow:dev", "--insecure", "--binary", bin)
	t.Logf("image push took %s", time.Since(began).Round(100*time.Millisecond))
	ref := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(ref, st.Registry+"/tools/kubeslow@sha256:") {
		t.Fatalf("image push: exit %d, stdout %q\n%s", code, out, errOut)
	}

	// The nodes' kubelets pull ref: the lab's own agent image under a registry's name, the same image (one ID).
	// The lab's kubelets never verify pull credentials (imagePullCredentialsVerificationPolicy NeverVerify, see
	// lab's labEviction): with KEP-2535's default they would, from then on, for the image's other names, and a
	// pod of lab.AgentImage, imported and never pulled, would make them pull kubeslow.local (ImagePullBackOff in
	// TestIntegrationNodeDNS after this test, 2026-11-28). The lab stays shared: the next test's pods of
	// lab.AgentImage start from the image on the node.
	// (Its default window, 20 s: a shorter one saves nothing, the kubelet listing the pulled image among the
	// node's images 28-30 s after the push either way: a 24 s run then 4 s of the wait below, or with 5 s an
	// 8 s run then 21 s of it, 2026-11-29.)
	began = time.Now()
	code, out, errOut = runArgs(t, "run", "--kubeconfig", d.AdminKubeconfig(), "--agent-image", ref,
		"--only", nodeagent.Name+","+dnsready.Name, "--out-dir", "", "-o", "json")
	t.Logf("run took %s, exit %d", time.Since(began).Round(100*time.Millisecond), code)
	if code != 0 && code != 1 { // 1: a finding about the lab's node is not this test's concern
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	var rep result.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\n%s\n%s", err, out, errOut)
	}
	na := find(rep, nodeagent.Name)
	if na == nil || !na.Status.Measured() {
		t.Fatalf("%s: %+v\n%s", nodeagent.Name, na, errOut)
	}
	if sched, got := metric(na, nodeagent.MetricAgentsScheduled, nil), metric(na, nodeagent.MetricNodesReported, nil); sched != float64(cfg.RealNodes) || got != float64(cfg.RealNodes) {
		t.Fatalf("agents scheduled %v, reported %v: %+v", sched, got, na.Records)
	}
	dr := find(rep, dnsready.Name)
	if dr == nil || dr.Status != result.StatusPass || metric(dr, "unresolved", nil) != 0 || metric(dr, "pods", nil) <= 0 {
		t.Fatalf("%s: %+v\n%s", dnsready.Name, dr, errOut)
	}

	// The node pulled the pushed image from the lab registry: the kubelet lists it among the node's images.
	c := kubernetes.NewForConfigOrDie(rc)
	name := strings.SplitN(ref, "@", 2)[0]
	began = time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := c.CoreV1().Nodes().Get(ctx, lab.RealNodeName(1), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, img := range n.Status.Images {
			for _, nm := range img.Names {
				if nm == ref || strings.HasPrefix(nm, name+":") {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s is not among %s's images: %v", ref, lab.RealNodeName(1), err)
	}
	t.Logf("%s lists the pushed image %s after the run", lab.RealNodeName(1), time.Since(began).Round(100*time.Millisecond))
}

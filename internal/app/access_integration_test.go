package app

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/measure"
)

// TestIntegrationRBACViewUser: a user holding only ClusterRole view and the two ClusterRoles `kubeslow rbac`
// prints (applied from its output), with a client certificate of the lab's CA, runs `kubeslow run --profile
// quick` given only its kubeconfig, on the managed layout (no node for the agent: etcd's metrics and the audit
// log are out of reach, said as such). No measurement is skipped or fails for a permission: any such skip is a
// rule missing from `kubeslow rbac`. The user is checked to be no admin first (it may not list Secrets nor bind
// roles), so a run that passes is a run the printed grants allowed. The same user's run on the kubeadm layout
// (the node tier on the control-plane node) is TestIntegrationKubeadm's healthy run, on that test's lab.
//
// It runs on the package's shared lab (appLab), first on it (its file sorts before the others), and deletes
// the roles and bindings it made. Until 2026-11-30 it brought up a lab of its own for each layout (~50 s of
// lab starts and teardowns): on the shared lab the viewer's run once could not start the agent image's pods on
// the real nodes (CI's run of 2026-11-28, fifth on the lab, after TestIntegrationImagePushKubeconfigOnly: the
// kubelet's pull-credential verification, since off on the lab's nodes; see docs/testing.md).
func TestIntegrationRBACViewUser(t *testing.T) {
	kinds := map[string]measure.Kind{}
	for _, m := range catalogue.Registry(catalogue.Options{}).All() {
		kinds[m.Name()] = measure.KindOf(m)
	}
	d, rc := labtest.Shared(t, appLab(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t.Setenv("KUBESLOW_STATE_DIR", d.State)
	admin := kubernetes.NewForConfigOrDie(rc)
	code, rbacYAML, errOut := runArgs(t, "rbac")
	if code != 0 {
		t.Fatalf("rbac: exit %d\n%s", code, errOut)
	}
	kc := labtest.ViewerKubeconfig(ctx, t, d, rc.Host, admin, rbacYAML)

	start := time.Now()
	// A 5 s window (quick's is 20 s): what is judged is what the viewer may do, not what a window observes; a
	// shorter one asks the same kinds of requests (the benchmarks run to their end whatever the window, which
	// ends after them).
	code, out, errOut := runArgs(t, "run", "--kubeconfig", kc, "--agent-image", lab.AgentImage, "--profile", "quick",
		"--window", "5s", "--out-dir", "", "-o", "json")
	t.Logf("run as %s took %s, exit %d", labtest.ViewUser, time.Since(start).Round(100*time.Millisecond), code)
	if code != 0 && code != 1 { // 1: a finding is not this test's concern (TestIntegrationBenchPods has the healthy lab)
		t.Fatalf("run as %s: exit %d\n%s\n%s", labtest.ViewUser, code, out, errOut)
	}
	rep := loggedReport(t, out, errOut)
	// On the managed layout only what no node can reach is out of reach (no permission would give it).
	labtest.CheckViewerRun(ctx, t, &rep, errOut, func(name string) bool { return kinds[name] == measure.ReadOnly },
		map[string]bool{"etcd.health": true, "api.audit": true}, admin)
}

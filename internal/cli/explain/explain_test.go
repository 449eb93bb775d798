package explain

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func pod(ns, name string) *corev1.Pod {
	ts := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), CreationTimestamp: ts(0)},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ts(0)},
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: ts(1)},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ts(9)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts(2)}}}}},
	}
}

// run executes explain against c with the kubeconfig namespace "team".
func run(t *testing.T, c *fake.Clientset, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	connect := func(*common.ClusterFlags) (Conn, error) {
		return Conn{Client: c, Namespace: "team", Context: "test"}, nil
	}
	cmd := New(common.IOStreams{Out: &out, ErrOut: &errOut}, connect, func() time.Time { return t0.Add(10 * time.Minute) })
	cmd.SetArgs(args)
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		var ee *common.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("error without an exit code: %v", err)
		}
		code = ee.Code
		errOut.WriteString(err.Error() + "\n")
	}
	return out.String(), errOut.String(), code
}

func TestExplainPod(t *testing.T) {
	c := fake.NewClientset(pod("team", "web-0"), pod("shop", "web-0"))
	// No NAMESPACE/: the kubeconfig context's namespace.
	out, _, code := run(t, c, "pod", "web-0", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	x, err := result.DecodeExplanation(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if x.Target.Namespace != "team" || x.Context != "test" || len(x.Pods) != 1 || x.Pods[0].Seconds != 9 {
		t.Errorf("explanation: %+v", x)
	}
	if out, _, code := run(t, c, "po", "shop/web-0"); code != 0 || !strings.Contains(out, "kubeslow explain pod shop/web-0") || !strings.Contains(out, "KS-EXPLAIN-PHASE") {
		t.Errorf("text, exit %d:\n%s", code, out)
	}
	if out, _, code := run(t, c, "pod", "shop/web-0", "-o", "html"); code != 0 || !strings.Contains(out, "<svg") || !strings.Contains(out, "readiness") {
		t.Errorf("html, exit %d:\n%s", code, out)
	}
}

// TestBadInput: each is one line on stderr and exit 2.
func TestBadInput(t *testing.T) {
	c := fake.NewClientset(pod("shop", "web-0"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pod", "shop/nope"}, "pod shop/nope not found"},
		{[]string{"foo", "x/y"}, `unknown kind "foo"`},
		{[]string{"deployment", "shop/web-0"}, "deployment shop/web-0 not found"},
		{[]string{"pod"}, "want KIND [NAMESPACE/]NAME"},
		{[]string{"pod", "a/b/c"}, "want NAMESPACE/NAME or NAME"},
		{[]string{"pod", "shop/web-0", "-o", "junit"}, "unknown output format"},
	} {
		out, errOut, code := run(t, c, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want one line with %q)", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestEventsForbidden: Events not readable — one line on stderr, and the timeline from the conditions.
func TestEventsForbidden(t *testing.T) {
	c := fake.NewClientset(pod("shop", "web-0"))
	c.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("RBAC"))
	})
	out, errOut, code := run(t, c, "pod", "shop/web-0", "-o", "json")
	if code != 0 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "Events of the pods not readable") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	x, err := result.DecodeExplanation(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if x.Pods[0].Events.Readable || x.Pods[0].Seconds != 9 {
		t.Errorf("pod: %+v", x.Pods[0])
	}
}

// TestKubeconfigNamespace: a NAME without NAMESPACE/ is in the context's namespace, else "default".
func TestKubeconfigNamespace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: a, context: {cluster: c, user: u, namespace: team}}, {name: b, context: {cluster: c, user: u}}]
current-context: a
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for ctx, want := range map[string]string{"": "team", "a": "team", "b": "default"} {
		if got := kubeconfigNamespace(kube.ClientOptions{Kubeconfig: path, Context: ctx}); got != want {
			t.Errorf("context %q: %q, want %q", ctx, got, want)
		}
	}
}

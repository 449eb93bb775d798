package explain

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func ctrl(kind, name, uid string) *metav1.OwnerReference {
	t := true
	return &metav1.OwnerReference{Kind: kind, Name: name, UID: types.UID(uid), Controller: &t}
}

// deploymentObjects: a Deployment "web" with an old ReplicaSet (revision 1, one pod) and the newest (revision 2)
// of three pods, one per node; node-c's pod took 12 s in the sandbox step, the others 1 s.
func deploymentObjects() []runtime.Object {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "d-uid"}, Spec: appsv1.DeploymentSpec{Selector: sel}}
	rs := func(name string, rev string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(name + "-uid"), Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"deployment.kubernetes.io/revision": rev}, OwnerReferences: []metav1.OwnerReference{*ctrl("Deployment", "web", "d-uid")}},
			Spec: appsv1.ReplicaSetSpec{Selector: sel}}
	}
	objs := []runtime.Object{d, rs("web-old", "1"), rs("web-new", "2"), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}
	lab := map[string]string{"app": "web"}
	old := buildPod(podSpec{name: "web-old-x", node: "node-a", scheduled: 0, sandbox: 1, started: 2, ready: 2, labels: lab, owner: ctrl("ReplicaSet", "web-old", "web-old-uid")})
	objs = append(objs, &old)
	var news []*corev1.Pod
	for _, s := range []podSpec{
		{name: "web-new-a", node: "node-a", scheduled: 0, sandbox: 1, started: 2, ready: 3},
		{name: "web-new-b", node: "node-b", scheduled: 0, sandbox: 1, started: 2, ready: 3},
		{name: "web-new-c", node: "node-c", scheduled: 0, sandbox: 12, started: 13, ready: 14},
	} {
		s.labels, s.owner = lab, ctrl("ReplicaSet", "web-new", "web-new-uid")
		p := buildPod(s)
		objs = append(objs, &p)
		news = append(news, &p)
		e := schedulerEvent(&p, "s", "Scheduled", "Normal", "Successfully assigned shop/"+p.Name+" to "+p.Spec.NodeName, 0.05, 0.05, 1)
		objs = append(objs, &e)
	}
	svc := service("web", lab, false)
	// The slice was last written when web-new-c became ready: for the other two pods it is a loose upper bound.
	sl := slice("web", 14, news...)
	objs = append(objs, &svc, &sl)
	return objs
}

// deploymentInput reads the Deployment through the fake clientset.
func deploymentInput(t *testing.T, all bool) Input {
	t.Helper()
	c := fake.NewClientset(deploymentObjects()...)
	in, err := Read(context.Background(), c, Ref{Kind: KindDeployment, Namespace: "shop", Name: "web", AllPods: all}, at(600))
	if err != nil {
		t.Fatal(err)
	}
	return *in
}

// TestDeploymentSlowNode: the newest ReplicaSet's three pods, one on a slow node: the node is named with the
// sandbox step, the dominant step across the pods.
func TestDeploymentSlowNode(t *testing.T) {
	in := deploymentInput(t, false)
	if len(in.Pods) != 3 || !strings.Contains(in.Target.Selection, "web-new (revision 2") {
		t.Fatalf("pods %d, selection %q", len(in.Pods), in.Target.Selection)
	}
	if len(in.Events) != 3 {
		t.Errorf("events: %d", len(in.Events))
	}
	x := Explain(in)
	valid(t, x)
	w := x.Workload
	if w == nil || w.Dominant != StepSandbox || w.Pods != 3 || w.Ready != 3 || w.Slowest[0].Name != "web-new-c" || w.Slowest[0].Phase != StepSandbox {
		t.Fatalf("workload: %+v", w)
	}
	for _, p := range w.Phases {
		if p.Name == StepSandbox && (p.MedianSeconds != 0.95 || p.MaxSeconds != 11.95 || p.MaxPod != "web-new-c") {
			t.Errorf("sandbox spread: %+v", p)
		}
	}
	var node *result.Finding
	for i := range x.Verdicts {
		if x.Verdicts[i].ID == IDNode {
			node = &x.Verdicts[i]
		}
	}
	if node == nil || !strings.Contains(node.Summary, "on node-c the sandbox step took 11.9 s") || node.Evidence[1].Value != 0.95 {
		t.Fatalf("verdicts: %+v", x.Verdicts)
	}
	if x.Verdicts[0].ID != IDNode || len(x.Verdicts) != 1 {
		t.Errorf("the slow node alone should be named (it explains web-new-c's sandbox step): %+v", x.Verdicts)
	}
	// --all-pods takes the old ReplicaSet's pod too.
	if in := deploymentInput(t, true); len(in.Pods) != 4 || !strings.Contains(in.Target.Selection, "--all-pods") {
		t.Errorf("all pods: %d %q", len(in.Pods), in.Target.Selection)
	}
}

// TestQuota: the ReplicaSet's FailedCreate Events (a ResourceQuota) are a verdict of their own.
func TestQuota(t *testing.T) {
	objs := deploymentObjects()
	e := corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web-new.fc", Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Namespace: "shop", Name: "web-new", UID: "web-new-uid"},
		Reason:         "FailedCreate", Type: "Warning", Count: 4, FirstTimestamp: mt(-20), LastTimestamp: mt(-5),
		Message: `Error creating: pods "web-new-c" is forbidden: exceeded quota: compute, requested: cpu=500m, used: cpu=1500m, limited: cpu=2`}
	c := fake.NewClientset(append(objs, &e)...)
	in, err := Read(context.Background(), c, Ref{Kind: KindDeployment, Namespace: "shop", Name: "web"}, at(600))
	if err != nil {
		t.Fatal(err)
	}
	x := Explain(*in)
	valid(t, x)
	var q *result.Finding
	for i := range x.Verdicts {
		if x.Verdicts[i].ID == IDCreate {
			q = &x.Verdicts[i]
		}
	}
	if q == nil || !strings.Contains(q.Title, "ResourceQuota") || !strings.Contains(q.Summary, "4 FailedCreate") || q.Evidence[1].Value != 20 {
		t.Fatalf("verdicts: %+v", x.Verdicts)
	}
}

// TestReadErrors: a missing object, a forbidden pod list, and forbidden Events (the timeline goes on).
func TestReadErrors(t *testing.T) {
	c := fake.NewClientset(deploymentObjects()...)
	ctx := context.Background()
	var nf *NotFoundError
	if _, err := Read(ctx, c, Ref{Kind: KindPod, Namespace: "shop", Name: "nope"}, at(60)); !errors.As(err, &nf) || err.Error() != "pod shop/nope not found" {
		t.Errorf("missing pod: %v", err)
	}
	if _, err := Read(ctx, c, Ref{Kind: KindJob, Namespace: "shop", Name: "web"}, at(60)); !errors.As(err, &nf) {
		t.Errorf("wrong kind of the name: %v", err)
	}
	var ue *UsageError
	if _, err := Read(ctx, c, Ref{Kind: "foo", Namespace: "shop", Name: "web"}, at(60)); !errors.As(err, &ue) {
		t.Errorf("unknown kind: %v", err)
	}
	forbid := func(res string) {
		c.PrependReactor("list", res, func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: res}, "", errors.New("no"))
		})
	}
	forbid("events")
	forbid("endpointslices")
	in, err := Read(ctx, c, Ref{Kind: KindPod, Namespace: "shop", Name: "web-new-a"}, at(60))
	if err != nil {
		t.Fatal(err)
	}
	if in.EventsErr == nil || in.Network.SlicesErr == nil || len(in.Events) != 0 {
		t.Fatalf("input: %+v", in)
	}
	x := Explain(*in)
	valid(t, x)
	if x.Pods[0].Events.Readable || step(t, x.Pods[0], StepReadiness).Seconds != 1 || len(x.OutOfReach) != 2 {
		t.Errorf("explanation: %+v %+v", x.Pods[0], x.OutOfReach)
	}
	forbid("pods")
	if _, err := Read(ctx, c, Ref{Kind: KindDeployment, Namespace: "shop", Name: "web"}, at(60)); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("pods forbidden: %v", err)
	}
}

// TestJob: a Job's pods, the whole-Job view (created → all Running → all Ready).
func TestJob(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "j-uid"}}
	two := int32(2)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "shop", UID: "j-uid", CreationTimestamp: mt(0)},
		Spec: batchv1.JobSpec{Selector: sel, Parallelism: &two, Completions: &two}}
	objs := []runtime.Object{j}
	for _, s := range []podSpec{
		{name: "train-0", node: "node-a", scheduled: 1, sandbox: 2, started: 4, ready: 4},
		{name: "train-1", node: "node-b", scheduled: 1, sandbox: 2, started: 9, ready: 10},
	} {
		s.labels, s.owner = sel.MatchLabels, ctrl("Job", "train", "j-uid")
		p := buildPod(s)
		objs = append(objs, &p)
	}
	c := fake.NewClientset(objs...)
	in, err := Read(context.Background(), c, Ref{Kind: KindJob, Namespace: "shop", Name: "train"}, at(60))
	if err != nil {
		t.Fatal(err)
	}
	x := Explain(*in)
	valid(t, x)
	jv := x.Workload.Job
	if jv == nil || jv.ToRunningSeconds != 9 || jv.ToReadySeconds != 10 || x.Workload.Dominant != StepStart {
		t.Fatalf("job: %+v workload %+v", jv, x.Workload)
	}
}

// TestStatefulSetRevision: only the pods of status.updateRevision, unless --all-pods.
func TestStatefulSetRevision(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "s-uid"}, Spec: appsv1.StatefulSetSpec{Selector: sel},
		Status: appsv1.StatefulSetStatus{UpdateRevision: "db-2", CurrentRevision: "db-1"}}
	objs := []runtime.Object{s}
	for i, rev := range []string{"db-1", "db-2", "db-2"} {
		p := buildPod(podSpec{name: "db-" + string(rune('0'+i)), node: "node-a", scheduled: 0, sandbox: 1, started: 2, ready: 3,
			labels: map[string]string{"app": "db", appsv1.ControllerRevisionHashLabelKey: rev}, owner: ctrl("StatefulSet", "db", "s-uid")})
		objs = append(objs, &p)
	}
	c := fake.NewClientset(objs...)
	for all, want := range map[bool]int{false: 2, true: 3} {
		in, err := Read(context.Background(), c, Ref{Kind: KindStatefulSet, Namespace: "shop", Name: "db", AllPods: all}, at(60))
		if err != nil || len(in.Pods) != want {
			t.Errorf("all %v: %v, %d pods", all, err, len(in.Pods))
		}
	}
}

// TestDaemonSetRevision: the newest pod's controller-revision-hash picks the latest rollout's pods.
func TestDaemonSetRevision(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "shop", UID: "ds-uid"}, Spec: appsv1.DaemonSetSpec{Selector: sel}}
	objs := []runtime.Object{ds}
	for i, rev := range []string{"h1", "h2", "h2"} {
		p := buildPod(podSpec{name: "agent-" + string(rune('a'+i)), node: "node-" + string(rune('a'+i)), scheduled: 0, sandbox: 1, started: 2, ready: 3,
			labels: map[string]string{"app": "agent", appsv1.ControllerRevisionHashLabelKey: rev}, owner: ctrl("DaemonSet", "agent", "ds-uid")})
		p.CreationTimestamp = mt(float64(i))
		objs = append(objs, &p)
	}
	c := fake.NewClientset(objs...)
	in, err := Read(context.Background(), c, Ref{Kind: KindDaemonSet, Namespace: "shop", Name: "agent"}, at(60))
	if err != nil || len(in.Pods) != 2 || !strings.Contains(in.Target.Selection, "h2") {
		t.Fatalf("%v: %d pods, %q", err, len(in.Pods), in.Target.Selection)
	}
}

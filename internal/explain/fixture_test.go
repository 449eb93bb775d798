package explain

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// t0 is the fixtures' creation time; at(s) is s seconds after it.
var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func mt(s float64) metav1.Time { return metav1.NewTime(at(s).Truncate(time.Second)) }

// podSpec describes a hand-built pod by its times (seconds after t0; < 0: not reached).
type podSpec struct {
	name, node                      string
	scheduled, sandbox, started     float64
	ready                           float64
	initStart, initEnd              float64 // an init container "setup" when initEnd > 0
	initCPU                         string
	readinessDelay, readinessPeriod int32
	restarts                        int32
	lastReason                      string
	labels                          map[string]string
	owner                           *metav1.OwnerReference
}

func buildPod(s podSpec) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: "shop", UID: types.UID("uid-" + s.name), CreationTimestamp: mt(0), Labels: s.labels},
		Spec:       corev1.PodSpec{NodeName: s.node, Containers: []corev1.Container{{Name: "app", Image: "shop/app:1"}}},
	}
	if s.owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*s.owner}
	}
	cond := func(t corev1.PodConditionType, sec float64) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, LastTransitionTime: mt(0)}
		if sec >= 0 {
			c.Status, c.LastTransitionTime = corev1.ConditionTrue, mt(sec)
		}
		p.Status.Conditions = append(p.Status.Conditions, c)
	}
	cond(corev1.PodScheduled, s.scheduled)
	cond(corev1.PodReadyToStartContainers, s.sandbox)
	cond(corev1.PodReady, s.ready)
	if s.readinessDelay > 0 {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{InitialDelaySeconds: s.readinessDelay, PeriodSeconds: s.readinessPeriod}
	}
	if s.initEnd > 0 {
		ic := corev1.Container{Name: "setup", Image: "shop/setup:1"}
		if s.initCPU != "" {
			ic.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.initCPU)}
		}
		p.Spec.InitContainers = []corev1.Container{ic}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "setup", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{StartedAt: mt(s.initStart), FinishedAt: mt(s.initEnd), Reason: "Completed"}}}}
	}
	cs := corev1.ContainerStatus{Name: "app", RestartCount: s.restarts}
	if s.started >= 0 {
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: mt(s.started)}
	} else {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	if s.lastReason != "" {
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: s.lastReason, ExitCode: 137}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	p.Status.Phase = corev1.PodRunning
	return p
}

// kubeletEvent is a core/v1 Event as the kubelet writes it (whole-second first/last timestamps).
func kubeletEvent(p *corev1.Pod, id, reason, typ, fieldPath, msg string, first, last float64, count int32) corev1.Event {
	return corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: p.Name + "." + id, Namespace: p.Namespace, UID: types.UID(p.Name + "-" + id)},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, FieldPath: fieldPath},
		Reason:         reason, Type: typ, Message: msg, Count: count,
		FirstTimestamp: mt(first), LastTimestamp: mt(last), Source: corev1.EventSource{Component: "kubelet", Host: p.Spec.NodeName},
	}
}

// schedulerEvent is an events.k8s.io Event as the scheduler writes it (eventTime in µs, a series when it recurs).
func schedulerEvent(p *corev1.Pod, id, reason, typ, msg string, first, last float64, count int32) corev1.Event {
	e := corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: p.Name + "." + id, Namespace: p.Namespace, UID: types.UID(p.Name + "-" + id)},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Reason:         reason, Type: typ, Message: msg, EventTime: metav1.NewMicroTime(at(first)), ReportingController: "default-scheduler",
	}
	if count > 1 {
		e.Series = &corev1.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(at(last))}
	}
	return e
}

func boolp(b bool) *bool { return &b }

// slice is an EndpointSlice of svc holding pods, written by the controller at sec.
func slice(svc string, sec float64, pods ...*corev1.Pod) discoveryv1.EndpointSlice {
	wt := mt(sec)
	s := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: svc + "-abc", Namespace: "shop",
		Labels:        map[string]string{discoveryv1.LabelServiceName: svc},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: endpointSliceManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &wt}}}}
	for _, p := range pods {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: boolp(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: p.Namespace, UID: p.UID}})
	}
	return s
}

func service(name string, sel map[string]string, headless bool) corev1.Service {
	s := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}, Spec: corev1.ServiceSpec{Selector: sel, ClusterIP: "10.96.0.10"}}
	if headless {
		s.Spec.ClusterIP = corev1.ClusterIPNone
	}
	return s
}

// initProbePod: an init container that sleeps 5 s, a readiness probe with initialDelaySeconds 10, behind a
// Service whose slice was written 1 s after Ready.
func initProbePod() Input {
	p := buildPod(podSpec{name: "web-0", node: "node-a", scheduled: 0, sandbox: 1, initStart: 1, initEnd: 6, initCPU: "100m",
		started: 7, ready: 17, readinessDelay: 10, readinessPeriod: 5, labels: map[string]string{"app": "web"}})
	evs := []corev1.Event{
		schedulerEvent(&p, "s", "Scheduled", "Normal", "Successfully assigned shop/web-0 to node-a", 0.183412, 0.183412, 1),
		kubeletEvent(&p, "p1", "Pulled", "Normal", "spec.initContainers{setup}", `Container image "shop/setup:1" already present on machine`, 1, 1, 1),
		kubeletEvent(&p, "p2", "Pulled", "Normal", "spec.containers{app}", `Container image "shop/app:1" already present on machine`, 6, 6, 1),
	}
	return Input{Target: ptarget("web-0"), Pods: []corev1.Pod{p}, Events: evs, Now: at(600),
		Network: Network{Services: []corev1.Service{service("web", map[string]string{"app": "web"}, false)}, Slices: []discoveryv1.EndpointSlice{slice("web", 18, &p)}}}
}

func ptarget(name string) result.ExplainTarget {
	return result.ExplainTarget{Kind: KindPod, Namespace: "shop", Name: name, Selection: "the pod"}
}

package explain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Kinds explain takes.
const (
	KindPod         = "pod"
	KindDeployment  = "deployment"
	KindStatefulSet = "statefulset"
	KindDaemonSet   = "daemonset"
	KindJob         = "job"
)

// Kinds lists them, for help and errors.
var Kinds = []string{KindPod, KindDeployment, KindStatefulSet, KindDaemonSet, KindJob}

// ParseKind accepts a kind as kubectl does: singular, plural or short name, any case.
func ParseKind(s string) (string, error) {
	switch strings.ToLower(s) {
	case "pod", "pods", "po":
		return KindPod, nil
	case "deployment", "deployments", "deploy":
		return KindDeployment, nil
	case "statefulset", "statefulsets", "sts":
		return KindStatefulSet, nil
	case "daemonset", "daemonsets", "ds":
		return KindDaemonSet, nil
	case "job", "jobs":
		return KindJob, nil
	}
	return "", &UsageError{fmt.Errorf("unknown kind %q: want one of %s", s, strings.Join(Kinds, ", "))}
}

// ParseRef reads NAMESPACE/NAME, or NAME in defaultNS.
func ParseRef(arg, defaultNS string) (ns, name string, err error) {
	ns, name, ok := strings.Cut(arg, "/")
	if !ok {
		ns, name = defaultNS, arg
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", &UsageError{fmt.Errorf("%q: want NAMESPACE/NAME or NAME", arg)}
	}
	return ns, name, nil
}

// UsageError is a command line explain cannot take (exit 2, like every error of explain).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Ref is the object to explain.
type Ref struct {
	Kind, Namespace, Name string
	// AllPods takes every pod of a rollout, not only its latest revision's.
	AllPods bool
}

func (r Ref) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// Read gets what Explain needs, with the view role's reads only (get/list of pods, events, the workload and
// its ReplicaSets, services, endpointslices); it creates nothing. A missing object or a pod list that is
// forbidden is an error; Events and EndpointSlices that are forbidden are recorded in the Input, and the
// timelines go on without them.
func Read(ctx context.Context, c kubernetes.Interface, ref Ref, now time.Time) (*Input, error) {
	in := &Input{Target: result.ExplainTarget{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}, Now: now}
	ns := ref.Namespace
	var ownerKind, ownerName string
	switch ref.Kind {
	case KindPod:
		p, err := c.CoreV1().Pods(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, readErr(ref, "pods", err)
		}
		in.Pods, in.Target.Selection = []corev1.Pod{*p}, "the pod"
	case KindDeployment:
		d, err := c.AppsV1().Deployments(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, readErr(ref, "deployments", err)
		}
		rss, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: selectorString(d.Spec.Selector)})
		if err != nil {
			return nil, readErr(ref, "replicasets", err)
		}
		owned := map[types.UID]bool{}
		var newest *appsv1.ReplicaSet
		rev := int64(-1)
		for i := range rss.Items {
			rs := &rss.Items[i]
			if !ownedBy(rs.OwnerReferences, d.UID) {
				continue
			}
			owned[rs.UID] = true
			r, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
			if r > rev || r == rev && newest != nil && rs.CreationTimestamp.After(newest.CreationTimestamp.Time) {
				newest, rev = rs, r
			}
		}
		if newest == nil {
			return nil, fmt.Errorf("%s has no ReplicaSet: it has created no pods", ref)
		}
		pods, err := listPods(ctx, c, ns, d.Spec.Selector)
		if err != nil {
			return nil, readErr(ref, "pods", err)
		}
		for _, p := range pods {
			if ref.AllPods && ownedByAny(p.OwnerReferences, owned) || ownedBy(p.OwnerReferences, newest.UID) {
				in.Pods = append(in.Pods, p)
			}
		}
		in.Target.Selection = fmt.Sprintf("ReplicaSet %s (revision %d, the newest)", newest.Name, rev)
		if ref.AllPods {
			in.Target.Selection = fmt.Sprintf("all pods of its %d ReplicaSet(s) (--all-pods); newest %s (revision %d)", len(owned), newest.Name, rev)
		}
		ownerKind, ownerName = "ReplicaSet", newest.Name
	case KindStatefulSet:
		s, err := c.AppsV1().StatefulSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, readErr(ref, "statefulsets", err)
		}
		rev := s.Status.UpdateRevision
		if rev == "" {
			rev = s.Status.CurrentRevision
		}
		pods, err := listPods(ctx, c, ns, s.Spec.Selector)
		if err != nil {
			return nil, readErr(ref, "pods", err)
		}
		in.Pods = ownedPods(pods, s.UID, rev, ref.AllPods)
		in.Target.Selection = "revision " + rev + " (status.updateRevision)"
		ownerKind, ownerName = "StatefulSet", s.Name
	case KindDaemonSet:
		ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, readErr(ref, "daemonsets", err)
		}
		pods, err := listPods(ctx, c, ns, ds.Spec.Selector)
		if err != nil {
			return nil, readErr(ref, "pods", err)
		}
		// The newest pod's revision is the latest rollout's (ControllerRevisions are not read: fewer rights).
		var newest *corev1.Pod
		for i := range pods {
			if ownedBy(pods[i].OwnerReferences, ds.UID) && (newest == nil || pods[i].CreationTimestamp.After(newest.CreationTimestamp.Time)) {
				newest = &pods[i]
			}
		}
		rev := ""
		if newest != nil {
			rev = newest.Labels[appsv1.ControllerRevisionHashLabelKey]
		}
		in.Pods = ownedPods(pods, ds.UID, rev, ref.AllPods)
		in.Target.Selection = "revision " + rev + " (the newest pod's controller-revision-hash)"
		ownerKind, ownerName = "DaemonSet", ds.Name
	case KindJob:
		j, err := c.BatchV1().Jobs(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, readErr(ref, "jobs", err)
		}
		pods, err := listPods(ctx, c, ns, j.Spec.Selector)
		if err != nil {
			return nil, readErr(ref, "pods", err)
		}
		in.Pods = ownedPods(pods, j.UID, "", true)
		in.Job = j
		in.Target.Selection = "the Job's pods"
		ownerKind, ownerName = "Job", j.Name
	default:
		_, err := ParseKind(ref.Kind)
		return nil, err
	}
	if ref.AllPods && ref.Kind != KindPod && ref.Kind != KindDeployment && ref.Kind != KindJob {
		in.Target.Selection = "all its pods (--all-pods)"
	}
	if len(in.Pods) == 0 {
		return nil, fmt.Errorf("%s: no pod found (%s)", ref, in.Target.Selection)
	}
	sort.Slice(in.Pods, func(i, j int) bool { return in.Pods[i].Name < in.Pods[j].Name })

	// Events: one (paginated) LIST of the namespace's Pod Events — or the one pod's — kept for the pods read.
	sel := fields.Set{"involvedObject.kind": "Pod"}
	if ref.Kind == KindPod {
		sel["involvedObject.name"] = ref.Name
	}
	uids := map[types.UID]bool{}
	for _, p := range in.Pods {
		uids[p.UID] = true
	}
	evs, err := kube.ListEvents(ctx, c, ns, sel.AsSelector().String())
	if err != nil {
		if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
			return nil, fmt.Errorf("listing events in %s: %w", ns, err)
		}
		in.EventsErr = errors.New("forbidden: cannot list events in namespace " + ns)
	}
	for _, e := range evs {
		if uids[e.InvolvedObject.UID] || e.InvolvedObject.UID == "" {
			in.Events = append(in.Events, e)
		}
	}
	if ownerKind != "" && in.EventsErr == nil {
		oe, err := kube.ListEvents(ctx, c, ns, fields.Set{"involvedObject.kind": ownerKind, "involvedObject.name": ownerName}.AsSelector().String())
		if err == nil {
			for _, e := range oe {
				if e.InvolvedObject.Kind == ownerKind && e.InvolvedObject.Name == ownerName {
					in.OwnerEvents = append(in.OwnerEvents, e)
				}
			}
		}
	}

	// Services, and the EndpointSlices of those that select one of the pods.
	svcs, err := c.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		in.Network.SlicesErr = fmt.Errorf("cannot list services in %s: %w", ns, err)
		return in, nil
	}
	in.Network.Services = svcs.Items
	var names []string
	for _, s := range svcs.Items {
		for i := range in.Pods {
			if len(selecting(&in.Pods[i], Network{Services: []corev1.Service{s}})) > 0 {
				names = append(names, s.Name)
				break
			}
		}
	}
	if len(names) == 0 {
		return in, nil
	}
	req, err := labels.NewRequirement(discoveryv1.LabelServiceName, selection.In, names)
	if err != nil {
		return nil, err
	}
	sl, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.NewSelector().Add(*req).String()})
	if err != nil {
		in.Network.SlicesErr = fmt.Errorf("cannot list endpointslices in %s: %w", ns, err)
		return in, nil
	}
	in.Network.Slices = sl.Items
	return in, nil
}

// readErr says plainly what could not be read: not found, forbidden, or another error.
func readErr(ref Ref, resource string, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return &NotFoundError{Err: fmt.Errorf("%s not found", ref)}
	case apierrors.IsForbidden(err):
		return fmt.Errorf("cannot read %s in namespace %s: forbidden (the view ClusterRole grants get/list on it)", resource, ref.Namespace)
	}
	return fmt.Errorf("reading %s of %s: %w", resource, ref, err)
}

// NotFoundError: the object asked about does not exist.
type NotFoundError struct{ Err error }

func (e *NotFoundError) Error() string { return e.Err.Error() }
func (e *NotFoundError) Unwrap() error { return e.Err }

func selectorString(s *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing().String()
	}
	return sel.String()
}

// listPods lists the pods matching sel, 500 a page.
func listPods(ctx context.Context, c kubernetes.Interface, ns string, sel *metav1.LabelSelector) ([]corev1.Pod, error) {
	if sel == nil {
		return nil, errors.New("the workload has no selector")
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	opts := metav1.ListOptions{LabelSelector: s.String(), Limit: 500}
	for {
		l, err := c.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, p := range l.Items {
			if s.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func ownedByAny(refs []metav1.OwnerReference, uids map[types.UID]bool) bool {
	for _, r := range refs {
		if uids[r.UID] {
			return true
		}
	}
	return false
}

// ownedPods are the pods owned by uid, of revision rev (its controller-revision-hash) unless all.
func ownedPods(pods []corev1.Pod, uid types.UID, rev string, all bool) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if ownedBy(p.OwnerReferences, uid) && (all || rev == "" || p.Labels[appsv1.ControllerRevisionHashLabelKey] == rev) {
			out = append(out, p)
		}
	}
	return out
}

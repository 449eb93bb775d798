// Package workload creates the pods that pod start-up benchmarks measure: bare pods at a client-side rate,
// or one Deployment or Indexed Job whose controller creates them. Everything carries the run's labels.
package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// Kind is how pods are created.
type Kind string

const (
	// Pods are created one by one by kubeslow at QPS (client-side rate).
	Pods Kind = "pods"
	// Deployment: one Deployment with Count replicas; the controller-manager creates the pods at its own rate.
	Deployment Kind = "deployment"
	// Job: one Indexed Job with Count completions and parallelism.
	Job Kind = "job"
)

// ParseKind accepts pods, deployment or job.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case Pods, Deployment, Job:
		return k, nil
	}
	return "", fmt.Errorf("unknown workload kind %q (want pods, deployment or job)", s)
}

// WorkloadLabel names the workload within a run (pods select on it).
const WorkloadLabel = "kubeslow.dev/workload"

// Spec describes the pods to create.
type Spec struct {
	Kind      Kind
	Name      string
	Namespace string
	RunID     string
	Count     int
	// QPS and Burst bound kubeslow's own create requests (Pods kind).
	QPS   float64
	Burst int
	// Workers send creates concurrently so that request latency does not cap the rate.
	Workers      int
	Image        string
	PullPolicy   corev1.PullPolicy
	Args         []string
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	Tolerations  []corev1.Toleration
}

// Create is one client-side create request.
type Create struct {
	Name string
	// Intended is when the schedule said to send it; Released is when the client-side limiter let it go;
	// Sent is when a worker took it (after Released only when every worker was busy); Done is when the
	// apiserver answered. Sent-Intended is client-side throttling.
	Intended, Released, Sent, Done time.Time
	Err                            string
}

// Outcome is what Run did.
type Outcome struct {
	Spec         Spec
	Start, End   time.Time
	Creates      []Create
	RequestedQPS float64
}

// Labels are the labels of every pod of the workload.
func (s Spec) Labels() map[string]string {
	l := kube.RunLabels(s.RunID)
	l[WorkloadLabel] = s.Name
	return l
}

// Selector selects the workload's pods.
func (s Spec) Selector() string {
	return kube.RunLabel + "=" + s.RunID + "," + WorkloadLabel + "=" + s.Name
}

func (s Spec) template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: s.Labels()},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			NodeSelector:                  s.NodeSelector,
			Affinity:                      s.Affinity,
			Tolerations:                   s.Tolerations,
			Containers: []corev1.Container{{Name: "pause", Image: s.Image, ImagePullPolicy: s.PullPolicy, Args: s.Args,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}},
		},
	}
}

// Pod is one pod of the workload, named name.
func (s Spec) Pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: s.Labels()}, Spec: s.template().Spec}
}

func (s Spec) validate() error {
	if s.Count <= 0 || s.Name == "" || s.Namespace == "" || s.RunID == "" || s.Image == "" {
		return errors.New("workload: count, name, namespace, run id and image are required")
	}
	if s.Kind == Pods && s.QPS <= 0 {
		return errors.New("workload: pods need a QPS > 0")
	}
	return nil
}

// Run creates the workload and returns when every create request has been answered (Pods) or the controller
// object exists (Deployment, Job). It never waits for pods to start: the collector watches that.
func Run(ctx context.Context, c kubernetes.Interface, clk clock.PassiveClock, s Spec) (*Outcome, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	out := &Outcome{Spec: s, Start: clk.Now(), RequestedQPS: s.QPS}
	meta := kube.ObjectMeta(s.Name, s.Namespace, s.RunID)
	meta.Labels[WorkloadLabel] = s.Name
	switch s.Kind {
	case Deployment:
		d := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(s.Count)), Selector: &metav1.LabelSelector{MatchLabels: s.Labels()}, Template: s.template()}}
		_, err := c.AppsV1().Deployments(s.Namespace).Create(ctx, d, metav1.CreateOptions{})
		out.End = clk.Now()
		return out, err
	case Job:
		tmpl := s.template()
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		j := &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{
			Completions: ptr.To(int32(s.Count)), Parallelism: ptr.To(int32(s.Count)),
			CompletionMode: ptr.To(batchv1.IndexedCompletion), Template: tmpl, BackoffLimit: ptr.To(int32(0))}}
		_, err := c.BatchV1().Jobs(s.Namespace).Create(ctx, j, metav1.CreateOptions{})
		out.End = clk.Now()
		return out, err
	}
	return runPods(ctx, c, clk, s, out)
}

// Limiter is the client-side limiter of the creates (Pods kind): QPS tokens a second in a bucket of Burst
// (at least 1). Burst 1 is a steady rate, clusterloader2's qpsLoad: one create every 1/QPS from the first;
// Burst N lets N go at once, then one every 1/QPS.
func (s Spec) Limiter() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(s.QPS), max(s.Burst, 1))
}

// Schedule is the intended send time of each of n creates from start, as the limiter lets them go when each
// is asked for as soon as possible: the first Burst (at least 1) at start, then one every 1/QPS.
func (s Spec) Schedule(start time.Time, n int) []time.Time {
	burst := max(s.Burst, 1)
	out := make([]time.Time, n)
	for i := range out {
		out[i] = start
		if i >= burst {
			out[i] = start.Add(time.Duration(float64(i-burst+1) / s.QPS * float64(time.Second)))
		}
	}
	return out
}

// runPods sends the creates as the limiter lets them go, waiting on clk (a fake clock in tests) when clk can
// wait, else on the wall clock.
func runPods(ctx context.Context, c kubernetes.Interface, clk clock.PassiveClock, s Spec, out *Outcome) (*Outcome, error) {
	lim := s.Limiter()
	waitTurn := func() error { return lim.Wait(ctx) }
	if wc, ok := clk.(clock.Clock); ok {
		waitTurn = func() error {
			now := wc.Now()
			r := lim.ReserveN(now, 1)
			d := r.DelayFrom(now)
			if d <= 0 {
				return ctx.Err()
			}
			select {
			case <-wc.After(d):
				return nil
			case <-ctx.Done():
				r.Cancel()
				return ctx.Err()
			}
		}
	}
	workers := max(s.Workers, 1)
	out.Creates = make([]Create, s.Count)
	for i, at := range s.Schedule(out.Start, s.Count) {
		out.Creates[i] = Create{Name: fmt.Sprintf("%s-%05d", s.Name, i), Intended: at}
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				cr := &out.Creates[i]
				cr.Sent = clk.Now()
				_, err := c.CoreV1().Pods(s.Namespace).Create(ctx, s.Pod(cr.Name), metav1.CreateOptions{})
				cr.Done = clk.Now()
				if err != nil {
					cr.Err = err.Error()
				}
			}
		}()
	}
	var err error
	for i := 0; i < s.Count; i++ {
		if err = waitTurn(); err != nil {
			break
		}
		out.Creates[i].Released = clk.Now()
		select {
		case jobs <- i:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
	out.End = clk.Now()
	if err != nil {
		// Keep only what was sent.
		n := 0
		for _, cr := range out.Creates {
			if !cr.Sent.IsZero() { // taken by a worker (Released alone: never sent)
				out.Creates[n] = cr
				n++
			}
		}
		out.Creates = out.Creates[:n]
	}
	return out, err
}

// Failed counts create requests that failed.
func (o *Outcome) Failed() int {
	n := 0
	for _, c := range o.Creates {
		if c.Err != "" {
			n++
		}
	}
	return n
}

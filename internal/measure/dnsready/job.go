package dnsready

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// JobMeasurement is the whole-job start-up benchmark (case A): an Indexed Job of Count members behind a
// headless Service, each waiting until every peer's per-pod name resolves (and, with Connect, connecting to
// every peer with back-off), run once as is and once with an unrelated Service created first. It reports
// under the DNS readiness result's name, so the same rules (KS-DNS-LAG, KS-DNS-BACKOFF) read its lags,
// labelled by variant, and name its job-level phases.
type JobMeasurement struct {
	Opts JobOptions
	// Runs are the last Run's recordings (the analysis's input).
	Runs []JobRun
}

// NewJob returns the job benchmark.
func NewJob(o JobOptions) *JobMeasurement { return &JobMeasurement{Opts: o} }

// Name implements measure.Measurement: the DNS readiness result, in its job shape.
func (*JobMeasurement) Name() string { return Name }

// Description implements measure.Measurement.
func (m *JobMeasurement) Description() string {
	client := "polling every name every " + m.Opts.Interval.String()
	if m.Opts.Connect {
		client += fmt.Sprintf(" and connecting with back-off (%s x%g)", m.Opts.Backoff.Base, m.Opts.Backoff.Factor)
	}
	warm := ""
	if m.Opts.WarmUp {
		warm = "; again with a warm-up Service"
	}
	return fmt.Sprintf("whole-job start-up: an Indexed Job of %d pods behind a headless Service, each %s%s", m.Opts.Count, client, warm)
}

const (
	jobRoleLabel = "kubeslow.dev/job"
	warmUpSvc    = "warm-up"
)

// Run runs the job once as is and (WarmUp) once more with an unrelated Service created first; the first
// run's Job stays (idle) until the run's cleanup, so the second differs only by that Service.
func (m *JobMeasurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	res := result.Result{Name: Name, Status: result.StatusPass}
	m.Runs = nil
	if m.Opts.Image == "" {
		return res, measure.Skipf("needs an image with the kubeslow binary at /kubeslow (--image; the lab's is used with --lab)")
	}
	nodes, err := measure.RealNodes(ctx, env)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return res, measure.Skipf("no permission to list nodes: %v", err)
		}
		return res, err
	}
	if len(nodes) == 0 {
		return res, measure.Skipf("no Ready, schedulable real node (kwok's simulated nodes run no resolver)")
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	variants := []string{VariantCold}
	if m.Opts.WarmUp {
		variants = append(variants, VariantWarmUp)
	}
	notRun := ""
	for i, v := range variants {
		env.Log.Info("job start-up run", "run", i+1, "of", len(variants), "variant", v)
		run, err := m.runOnce(ctx, env, v, fmt.Sprintf("job-%c", 'a'+i), names)
		if err != nil {
			return res, err
		}
		m.Runs = append(m.Runs, run)
		if run.Stopped > 0 && i+1 < len(variants) {
			notRun = fmt.Sprintf("%s not run: the run's --budget ended", strings.Join(variants[i+1:], ", "))
			break
		}
	}
	ReportJob(&res, m.Runs, m.Opts)
	if notRun != "" {
		res.Reason = strings.TrimPrefix(res.Reason+"; "+notRun, "; ")
	}
	return res, nil
}

// runOnce creates the Services and the Job named job and waits until every member reported (or Wait ends, or
// the run's budget: the members then wait no longer than it, and run.Stopped says when kubeslow stopped).
func (m *JobMeasurement) runOnce(ctx context.Context, env *measure.Env, variant, job string, nodes []string) (JobRun, error) {
	run := JobRun{Variant: variant, Connect: m.Opts.Connect}
	svcs := env.Client.CoreV1().Services(env.Namespace)
	if variant == VariantWarmUp {
		// Unrelated: its own selector, which matches nothing.
		if _, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: kube.ObjectMeta(warmUpSvc, env.Namespace, env.RunID), Spec: corev1.ServiceSpec{
			Selector: map[string]string{jobRoleLabel: warmUpSvc}, Ports: []corev1.ServicePort{{Name: "p", Port: 80}},
		}}, metav1.CreateOptions{}); err != nil {
			return run, createErr("the warm-up Service", err)
		}
	}
	if _, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: kube.ObjectMeta(job, env.Namespace, env.RunID), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{jobRoleLabel: job},
		Ports: []corev1.ServicePort{{Name: "p", Port: int32(m.Opts.Port)}},
	}}, metav1.CreateOptions{}); err != nil {
		return run, createErr("the headless Service", err)
	}
	hosts := make([]string, m.Opts.Count)
	fqdns := make([]string, m.Opts.Count)
	for i := range hosts {
		// An Indexed Job's pod with a subdomain has the hostname <job>-<index>.
		hosts[i] = fmt.Sprintf("%s-%d", job, i)
		fqdns[i] = fmt.Sprintf("%s.%s.%s.svc.cluster.local.", hosts[i], job, env.Namespace)
	}
	// Each member's report comes on its log; a follower per member starts when it is first seen Running.
	type report struct {
		host, pod, node string
		line            []byte
		err             error
	}
	reports := make(chan report, m.Opts.Count)
	wctx, stop, bound := env.BoundContext(ctx, m.Opts.Wait+time.Minute)
	// followers are waited for before returning, after wctx ended (the deferred stop runs first); none
	// starts once that wait has begun.
	var followers sync.WaitGroup
	var mu sync.Mutex
	closed := false
	defer func() {
		mu.Lock()
		closed = true
		mu.Unlock()
		followers.Wait()
	}()
	defer stop()
	obs := newObserver(env, jobRoleLabel+"="+job, job)
	// Lead first (case A's order): the Job starts with its lead alone; once the lead is seen Running — its
	// container started, and with it the member's first lookups of every peer — and LeadAlone later, the Job
	// is scaled to Count, so the lead has asked for every peer before any peer exists.
	released := make(chan error, 1)
	release := func(err error) { // never blocks: a lead seen Running twice patches twice, the first answer counts
		select {
		case released <- err:
		default:
		}
	}
	if !m.Opts.LeadFirst {
		released <- nil
	}
	obs.onRunning = func(p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		if m.Opts.LeadFirst && hostOf(p) == hosts[0] {
			followers.Add(1)
			go func() {
				defer followers.Done()
				select {
				case <-env.Clock.After(m.Opts.LeadAlone):
				case <-wctx.Done():
					release(wctx.Err())
					return
				}
				patch := fmt.Appendf(nil, `{"spec":{"parallelism":%d}}`, m.Opts.Count)
				_, err := env.Client.BatchV1().Jobs(env.Namespace).Patch(wctx, job, types.MergePatchType, patch, metav1.PatchOptions{})
				release(err)
			}()
		}
		followers.Add(1)
		go func() {
			defer followers.Done()
			line, err := followReport(wctx, env, p.Name)
			reports <- report{host: hostOf(p), pod: p.Name, node: p.Spec.NodeName, line: line, err: err}
		}()
	}
	if err := obs.start(wctx, env); err != nil {
		return run, err
	}
	// The members wait no longer than kubeslow does for them.
	req := agentproto.JobPeer{Listen: fmt.Sprintf("0.0.0.0:%d", m.Opts.Port), Interval: m.Opts.Interval, Wait: min(m.Opts.Wait, bound.D), Timeout: 2 * time.Second,
		Connect: m.Opts.Connect, BackoffBase: m.Opts.Backoff.Base, BackoffFactor: m.Opts.Backoff.Factor, BackoffCap: m.Opts.Backoff.Cap, Names: fqdns}
	run.Created = env.Clock.Now()
	if _, err := env.Client.BatchV1().Jobs(env.Namespace).Create(ctx, m.job(env, job, nodes, req), metav1.CreateOptions{}); err != nil {
		return run, createErr("the Job", err)
	}
	got := map[string]report{}
	for len(got) < m.Opts.Count {
		select {
		case err := <-released:
			if err != nil {
				return run, fmt.Errorf("scaling the Job to %d members after its lead: %w", m.Opts.Count, err)
			}
		case r := <-reports:
			got[r.host] = r
		case <-wctx.Done():
			if ctx.Err() != nil {
				return run, ctx.Err()
			}
			if measure.BudgetEnded(wctx) {
				run.Stopped = bound.D
			}
			env.Log.Warn("job members did not all report", "reported", len(got), "of", m.Opts.Count, "within", bound.D)
		}
		if wctx.Err() != nil {
			break
		}
	}
	stop()
	running, ready, endpoints := obs.snapshot()
	for _, h := range hosts {
		mb := JobMember{Host: h, Running: running[h], Ready: ready[h], Endpoint: endpoints[h]}
		if r, ok := got[h]; ok {
			mb.Pod, mb.Node = r.pod, r.node
			if r.err != nil {
				mb.Error = r.err.Error()
			} else if p, err := req.Decode(r.line); err != nil {
				mb.Error = err.Error()
			} else {
				mb.Report = &p
			}
		} else {
			mb.Error = "no report"
		}
		run.Members = append(run.Members, mb)
	}
	return run, nil
}

// job is the Indexed Job: Count members at once (or its lead alone, with LeadFirst), on the real nodes, never retried, bounded by Wait.
func (m *JobMeasurement) job(env *measure.Env, name string, nodes []string, req agentproto.JobPeer) *batchv1.Job {
	labels := kube.RunLabels(env.RunID)
	labels[jobRoleLabel] = name
	parallelism := m.Opts.Count
	if m.Opts.LeadFirst {
		parallelism = 1
	}
	return &batchv1.Job{ObjectMeta: kube.ObjectMeta(name, env.Namespace, env.RunID), Spec: batchv1.JobSpec{
		CompletionMode: ptr.To(batchv1.IndexedCompletion), Completions: ptr.To(int32(m.Opts.Count)), Parallelism: ptr.To(int32(parallelism)),
		BackoffLimit: ptr.To(int32(0)), ActiveDeadlineSeconds: ptr.To(int64((m.Opts.Wait + 2*time.Minute).Seconds())),
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Subdomain: name, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To(int64(0)),
			EnableServiceLinks: ptr.To(false),
			Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: nodes}}}}}}},
			Containers: []corev1.Container{{Name: "member", Image: m.Opts.Image, ImagePullPolicy: corev1.PullIfNotPresent, Args: req.Args(),
				Ports: []corev1.ContainerPort{{Name: "p", ContainerPort: int32(m.Opts.Port)}}}},
		}},
	}}
}

// followReport follows a member's log until its report line (a JSON object) or the end of the log.
func followReport(ctx context.Context, env *measure.Env, pod string) ([]byte, error) {
	rc, err := env.Client.CoreV1().Pods(env.Namespace).GetLogs(pod, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("following %s's log: %w", pod, err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if l := sc.Bytes(); len(l) > 0 && l[0] == '{' {
			return append([]byte(nil), l...), nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s's log: %w", pod, err)
	}
	return nil, fmt.Errorf("%s's log ended without a report", pod)
}

func createErr(what string, err error) error {
	if apierrors.IsForbidden(err) {
		return measure.Skipf("no permission to create %s: %v", what, err)
	}
	return fmt.Errorf("creating %s: %w", what, err)
}

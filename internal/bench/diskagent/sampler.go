package diskagent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
)

// SamplerRole is the sampler pods' role label.
const SamplerRole = "disk-sampler"

// Stream is a running sampler: its samples go to the emit function given to StartSampler until the context
// ends or the agent stops.
type Stream struct {
	done chan struct{}
	err  error
	n    int
}

// Wait waits until the stream ended and the pod is deleted; the error says why it ended early, if it did.
func (s *Stream) Wait() error {
	<-s.done
	return s.err
}

// StartSampler starts `agent disk-sample` on spec.Node for spec.HostDir's disk (the pod's name, namespace,
// run, node and image from spec), waits until it runs (at most startTimeout), and then hands each sample
// to emit, as the agent prints it (the pod's log followed), until ctx ends; the pod is deleted then. The
// samples' times are the node's clock.
func StartSampler(ctx context.Context, c kubernetes.Interface, spec PodSpec, interval, duration, startTimeout time.Duration, emit func(diskprobe.Sample)) (*Stream, error) {
	req := agentproto.DiskSample{Root: HostRoot, Dir: spec.HostDir, Interval: interval, Duration: duration}
	spec.Role, spec.Proc, spec.Args = SamplerRole, true, req.Args()
	pods := c.CoreV1().Pods(spec.Namespace)
	if _, err := pods.Create(ctx, spec.Pod(), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the disk sampler on %s: %w", spec.Node, err)
	}
	p, err := WaitPod(ctx, c, spec.Namespace, spec.Name, startTimeout, Running)
	if err == nil && Ended(p) {
		err = fmt.Errorf("the disk sampler on %s ended at once: %s%s", spec.Node, PodWhy(p), logTail(ctx, c, spec.Namespace, spec.Name))
	}
	if err != nil {
		Delete(ctx, c, spec.Namespace, spec.Name)
		return nil, err
	}
	rc, err := pods.GetLogs(spec.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		Delete(ctx, c, spec.Namespace, spec.Name)
		return nil, fmt.Errorf("following the disk sampler on %s: %w", spec.Node, err)
	}
	s := &Stream{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer Delete(ctx, c, spec.Namespace, spec.Name)
		defer rc.Close()
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var other []string
		for sc.Scan() {
			if smp, ok := req.DecodeLine(sc.Bytes()); ok {
				s.n++
				emit(smp)
			} else if len(other) < 5 {
				other = append(other, strings.TrimSpace(sc.Text()))
			}
		}
		if ctx.Err() != nil {
			return // stopped by the run: the normal end
		}
		err := sc.Err()
		if err == nil || errors.Is(err, io.EOF) {
			err = errors.New("the agent stopped")
		}
		if p, gerr := pods.Get(context.WithoutCancel(ctx), spec.Name, metav1.GetOptions{}); gerr == nil && Ended(p) {
			err = fmt.Errorf("%w: %s", err, PodWhy(p))
		}
		s.err = fmt.Errorf("disk sampler on %s after %d samples: %v (%s)", spec.Node, s.n, err, strings.Join(other, "; "))
	}()
	return s, nil
}

// logTail is the end of a pod's log, for an error message.
func logTail(ctx context.Context, c kubernetes.Interface, ns, name string) string {
	tail := int64(5)
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	b, err := c.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(lctx)
	if err != nil || len(b) == 0 {
		return ""
	}
	return ": " + strings.TrimSpace(string(b))
}

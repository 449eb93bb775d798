package diskagent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// BenchRole is the bench pod's role label.
const BenchRole = "disk-bench"

// Bench is `bench disk --node`: etcd's fio recipe (diskprobe.RunSync) in an agent pod on Node, on the host
// directory Dir (the disk to judge: the kubelet's or runtime's directory, etcd's data directory).
type Bench struct {
	Node, Dir, Image string
	Recipe           diskprobe.Recipe
	// Timeout bounds the pod's start and run.
	Timeout time.Duration
}

// Name implements measure.Measurement: the same result as the local bench, so KS-DISK-SYNC reads it.
func (*Bench) Name() string { return disk.BenchName }

// Description implements measure.Measurement.
func (b *Bench) Description() string {
	return fmt.Sprintf("etcd's fio recipe on %s:%s from an agent pod (%d-byte writes, fdatasync after each, %d bytes)", b.Node, b.Dir, b.Recipe.BlockSize, b.Recipe.Size)
}

// Run starts the pod, waits until it ended, reads its report from its log and deletes it. The result's
// path label is the node's directory, with the node named.
func (b *Bench) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	if b.Image == "" {
		return result.Result{}, measure.Skipf("no agent image (--image; the lab's is automatic)")
	}
	req := agentproto.BenchDisk{Path: HostRoot + b.Dir, Size: b.Recipe.Size, BlockSize: b.Recipe.BlockSize}
	spec := PodSpec{Namespace: env.Namespace, RunID: env.RunID, Name: "disk-bench", Node: b.Node, Image: b.Image, Role: BenchRole,
		HostDir: b.Dir, Args: req.Args()}
	if _, err := env.Client.CoreV1().Nodes().Get(ctx, b.Node, metav1.GetOptions{}); err != nil {
		return result.Result{}, fmt.Errorf("node %s: %w", b.Node, err)
	}
	start := env.Clock.Now()
	if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, spec.Pod(), metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return result.Result{}, measure.Skipf("no permission to create the agent pod: %v", err)
		}
		return result.Result{}, fmt.Errorf("creating the disk bench pod: %w", err)
	}
	defer Delete(ctx, env.Client, env.Namespace, spec.Name)
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	p, err := WaitPod(ctx, env.Client, env.Namespace, spec.Name, timeout, Ended)
	if err != nil {
		return result.Result{}, err
	}
	limit := int64(1 << 20)
	out, err := env.Client.CoreV1().Pods(env.Namespace).GetLogs(spec.Name, &corev1.PodLogOptions{LimitBytes: &limit}).DoRaw(ctx)
	if err != nil {
		return result.Result{}, fmt.Errorf("the disk bench's report on %s: %w", b.Node, err)
	}
	res, err := req.Decode(out)
	if err != nil {
		return result.Result{}, fmt.Errorf("the disk bench on %s (%s): %w", b.Node, PodWhy(p), err)
	}
	for i := range res.Metrics {
		res.Metrics[i].Labels = map[string]string{"path": b.Node + ":" + b.Dir, "node": b.Node}
	}
	res.Start, res.End = start, env.Clock.Now()
	return *res, nil
}

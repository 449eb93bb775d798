package scenario

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/lab"
)

// The image-pull scenario's registry: 3 MiB/s per download and 1.5 s per request, so the lab's 33 MiB
// medium image takes ~20 s to pull and even the small one a few seconds (a distant, rate-limited registry).
const (
	PullBytesPerSecond = 3 << 20
	PullLatency        = 1500 * time.Millisecond
)

// The image-pull scenario's pods (namespace default, on real node 1): the big image's pod, then the small
// image's, created once the big pull has begun.
const (
	PullBigPod   = "pull-big"
	PullSmallPod = "pull-small"
)

// BigImage and SmallImage are the lab registry's medium (32 MiB of padding) and small (1 MiB) images.
func BigImage() string   { return lab.RegistryImages()[1].Ref }
func SmallImage() string { return lab.RegistryImages()[0].Ref }

func imagePullScenario() Scenario {
	return Scenario{Name: "image-pull", Case: "B", Layouts: bothLayouts,
		Description: fmt.Sprintf("lab-node-1 pulls one image at a time (serializeImagePulls: true) from a registry serving %d MiB/s with %s per request: "+
			"a small image's pull waits behind a 33 MiB one", PullBytesPerSecond>>20, PullLatency),
		Configure: func(c *lab.Config) {
			c.RealNodes = max(c.RealNodes, 1)
			c.ImagePulls = lab.ImagePullSettings{Serialize: true}
			c.Registry = lab.RegistrySettings{BytesPerSecond: PullBytesPerSecond, Latency: dur(PullLatency)}
		},
		Start: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			client, err := lab.AdminClient(d)
			if err != nil {
				return err
			}
			return PullBehind(ctx, client, lab.RealNodeName(1), progress)
		},
		Expect: []string{"KS-NODE-PULL-QUEUE"}}
}

// PullBehind makes node pull BigImage and, once that pull has begun, SmallImage (pods PullBigPod and
// PullSmallPod in namespace default, pulled whether present or not), and waits until both run.
func PullBehind(ctx context.Context, c kubernetes.Interface, node string, progress lab.Progress) error {
	if err := PullPod(ctx, c, PullBigPod, node, BigImage()); err != nil {
		return err
	}
	// The kubelet says Pulling once it has asked its puller for the image.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + PullBigPod + ",reason=Pulling"})
		return err == nil && len(evs.Items) > 0, nil
	}); err != nil {
		return fmt.Errorf("%s never began pulling %s: %w", PullBigPod, BigImage(), err)
	}
	progress("%s pulling %s on %s", PullBigPod, BigImage(), node)
	if err := PullPod(ctx, c, PullSmallPod, node, SmallImage()); err != nil {
		return err
	}
	for _, p := range []string{PullBigPod, PullSmallPod} {
		if err := WaitRunning(ctx, c, p, 3*time.Minute); err != nil {
			return err
		}
	}
	progress("%s and %s running", PullBigPod, PullSmallPod)
	return nil
}

// PullPod creates a pod in namespace default on node running image (its entrypoint pauses), always pulled.
func PullPod(ctx context.Context, c kubernetes.Interface, name, node, image string) error {
	grace := int64(0)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"kubeslow.io/lab-scenario": "image-pull"}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "c", Image: image, ImagePullPolicy: corev1.PullAlways}}}}
	_, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	return err
}

// WaitRunning polls pod name (namespace default) until it runs, for at most timeout.
func WaitRunning(ctx context.Context, c kubernetes.Interface, name string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = string(p.Status.Phase)
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("pod %s failed: %s", name, p.Status.Message)
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		return fmt.Errorf("pod %s not running after %s (last: %s): %w", name, timeout, last, err)
	}
	return nil
}

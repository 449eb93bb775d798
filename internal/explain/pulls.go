package explain

import (
	"regexp"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
)

// Pulled is what a kubelet's Pulled Event says of one image pull.
type Pulled struct {
	Image string
	// Pull is the pull's own time; Total runs from the Pulling Event, so it includes the wait for the node's
	// puller (serializeImagePulls, maxParallelImagePulls). Both are truncated to milliseconds by the kubelet.
	Pull, Total time.Duration
	// Waited is false when the message gave no "including waiting" figure (kubelets before 1.28): Total is then
	// Pull and the wait is unknown.
	Waited bool
	// Bytes is the image size the kubelet reported (0 when the message had none).
	Bytes int64
	// Present: "Container image … already present on machine": nothing was pulled.
	Present bool
}

// Wait is the time the pull queued for the node's puller (0 when unknown).
func (p Pulled) Wait() time.Duration { return max(0, p.Total-p.Pull) }

// BytesPerSecond is the pull's own throughput (0 when the size or the time is unknown).
func (p Pulled) BytesPerSecond() float64 {
	if p.Bytes <= 0 || p.Pull <= 0 {
		return 0
	}
	return float64(p.Bytes) / p.Pull.Seconds()
}

var (
	// Kubelets 1.19–1.27: `Successfully pulled image "x" in 3.2s`.
	pulledOld = regexp.MustCompile(`^Successfully pulled image "([^"]*)" in ([0-9.hmsuµn]+)\.?$`)
	// `Container image "x" already present on machine` (1.33+: "… and can be accessed by the pod").
	pulledPresent = regexp.MustCompile(`^Container image "([^"]*)" already present on machine`)
	// `Pulling image "x"`.
	pullingMsg = regexp.MustCompile(`^Pulling image "([^"]*)"`)
)

// ParsePulled reads a Pulled Event's message: the kubelet 1.28+ form with the waiting time and the image size
// (kubelet.ParsePulled), the older form with the pull's time alone, and "already present on machine"; ok is
// false for anything else.
func ParsePulled(msg string) (Pulled, bool) {
	if img, pull, total, bytes, ok := kubelet.ParsePulled(msg); ok {
		if total < pull { // a wait cannot be negative: a message that says so is not trusted for the wait
			total = pull
		}
		return Pulled{Image: img, Pull: pull, Total: total, Waited: true, Bytes: bytes}, true
	}
	if m := pulledOld.FindStringSubmatch(msg); m != nil {
		d, err := time.ParseDuration(m[2])
		if err != nil || d < 0 {
			return Pulled{}, false
		}
		return Pulled{Image: m[1], Pull: d, Total: d}, true
	}
	if m := pulledPresent.FindStringSubmatch(msg); m != nil {
		return Pulled{Image: m[1], Present: true}, true
	}
	return Pulled{}, false
}

// pullingImage is the image of a Pulling Event's message.
func pullingImage(msg string) (string, bool) {
	m := pullingMsg.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	return m[1], true
}

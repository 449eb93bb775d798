// Package diskagent runs kubeslow's disk measurements on a node through the agent image: a pod of the run
// pinned to the node, with only the directory to measure mounted from the host (and, for the sampler, the
// host's /proc read-only), as an unprivileged root with no capabilities. `bench disk --node` runs etcd's fio
// recipe there; `bench churn` samples the disk of every node it churns on.
package diskagent

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// HostRoot is where the pod sees the host's paths (as node_exporter's --path.rootfs).
const HostRoot = "/host"

// RoleLabel marks the pods by role (they carry the run's labels too, so the run's cleanup removes them).
const RoleLabel = "kubeslow.dev/role"

// PodSpec says what an agent pod mounts and runs.
type PodSpec struct {
	Namespace, RunID, Name, Node, Image, Role string
	// HostDir is the host directory to measure, mounted read-write at HostRoot+HostDir (the probes write a
	// small file there and remove it).
	HostDir string
	// Proc mounts the host's /proc read-only at HostRoot/proc (diskstats, PSI, the D-state tasks).
	Proc bool
	// Args are the agent's arguments (the image's entrypoint is the kubeslow binary).
	Args []string
}

// Pod is the agent pod: pinned to the node by name (no scheduling, any taint tolerated), never restarted.
//
// Privileges: none beyond the two mounts. It runs as root because the runtime's and etcd's directories
// belong to root, but with every capability dropped, no privilege escalation, a read-only root filesystem
// and the runtime's default seccomp profile; no host network or PID namespace. The host's /proc is a
// read-only hostPath (the per-process stat files and /proc/pressure are world-readable).
func (s PodSpec) Pod() *corev1.Pod {
	labels := kube.RunLabels(s.RunID)
	labels[RoleLabel] = s.Role
	dir := corev1.HostPathDirectory
	vols := []corev1.Volume{{Name: "dir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: s.HostDir, Type: &dir}}}}
	mounts := []corev1.VolumeMount{{Name: "dir", MountPath: path.Join(HostRoot, s.HostDir)}}
	if s.Proc {
		vols = append(vols, corev1.Volume{Name: "proc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/proc", Type: &dir}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "proc", MountPath: HostRoot + "/proc", ReadOnly: true})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: s.Node, RestartPolicy: corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To(int64(0)), AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks: ptr.To(false),
			Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Volumes:            vols,
			Containers: []corev1.Container{{
				Name: "agent", Image: s.Image, ImagePullPolicy: corev1.PullIfNotPresent, Args: s.Args, VolumeMounts: mounts,
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: ptr.To(int64(0)), RunAsNonRoot: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem: ptr.To(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
}

// WaitPod polls the pod every second until done says so, or timeout; the error then says where the pod was.
func WaitPod(ctx context.Context, c kubernetes.Interface, ns, name string, timeout time.Duration, done func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		return done(p), nil
	})
	if err != nil {
		if last != nil {
			return last, fmt.Errorf("pod %s on %s: %s (%w)", name, last.Spec.NodeName, PodWhy(last), err)
		}
		return nil, fmt.Errorf("pod %s: %w", name, err)
	}
	return last, nil
}

// Running is true once the pod runs (or already ended).
func Running(p *corev1.Pod) bool { return p.Status.Phase != corev1.PodPending }

// Ended is true once the pod succeeded or failed.
func Ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// PodWhy says where a pod is: its container's waiting reason, exit, or the phase.
func PodWhy(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return strings.TrimSpace(w.Reason + " " + w.Message)
		}
		if t := cs.State.Terminated; t != nil {
			return strings.TrimSpace(fmt.Sprintf("exited %d %s %s", t.ExitCode, t.Reason, t.Message))
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	return string(p.Status.Phase)
}

// Delete removes the pod at once (ctx may have ended: the deletion gets its own 30 s).
func Delete(ctx context.Context, c kubernetes.Interface, ns, name string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := c.CoreV1().Pods(ns).Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	if err != nil && !apierrors.IsNotFound(err) {
		_ = err // the run's cleanup deletes what carries its labels
	}
}

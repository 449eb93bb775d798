package kube

import (
	"bytes"
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Exec runs a command in a pod's first container through the apiserver (as kubectl exec does) and returns
// its output.
func Exec(ctx context.Context, cfg *rest.Config, c kubernetes.Interface, ns, pod string, command ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = ExecStream(ctx, cfg, c, ns, pod, &o, &e, command...)
	return o.String(), e.String(), err
}

// ExecStream runs a command in a pod's first container, writing its output to stdout and stderr as it comes.
func ExecStream(ctx context.Context, cfg *rest.Config, c kubernetes.Interface, ns, pod string, stdout, stderr io.Writer, command ...string) error {
	req := c.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
}

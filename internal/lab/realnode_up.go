package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

func componentEnv() []string {
	env := os.Environ()
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = kv + ":/usr/local/sbin:/usr/sbin:/sbin"
			return env
		}
	}
	return append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
}

// upRealNodes starts CoreDNS, the registry and the real nodes, and routes the pod network between them.
func upRealNodes(ctx context.Context, d Dirs, c *Config, st *State, client kubernetes.Interface, step func(string, ...any)) error {
	agent := c.AgentBinary
	if agent == "" {
		return errors.New("real nodes need the kubeslow binary for the lab images (Config.AgentBinary)")
	}
	env := componentEnv()
	st.HostPaths = missingHostPaths()
	if err := d.saveState(st); err != nil {
		return err
	}
	// Cluster DNS.
	if err := ensureDNSObjects(ctx, client); err != nil {
		return fmt.Errorf("DNS objects: %w", err)
	}
	args, err := corednsArgs(d, c, st.Binaries[CoreDNS])
	if err != nil {
		return err
	}
	if err := startInAndWait(ctx, d, CoreDNS, NetNS, args, env, step, httpOK(fmt.Sprintf("http://%s:%d/ready", ControlPlaneIP, corednsReadyPort))); err != nil {
		return err
	}
	// The registry is the kubeslow binary itself, as a lab process.
	regArgs := []string{agent, "lab", "registry-serve", "--addr", RegistryHost(), "--dir", filepath.Join(d.State, "registry"),
		"--bytes-per-second", fmt.Sprint(c.Registry.BytesPerSecond), "--latency", c.Registry.Latency.String()}
	if err := startInAndWait(ctx, d, "registry", NetNS, regArgs, env, step, httpOK("http://"+RegistryHost()+"/v2/")); err != nil {
		return err
	}
	images, err := buildLabImages(d, agent)
	if err != nil {
		return err
	}
	step("lab images %s and %s built from %s", AgentImage, PauseImage, agent)

	var nodes []realNode
	for i := 1; i <= c.RealNodes; i++ {
		n := realNode{i}
		nodes = append(nodes, n)
		if err := setupNodeNetwork(ctx, n); err != nil {
			return fmt.Errorf("%s network: %w", n.name(), err)
		}
		if err := nodeFiles(d, c, n); err != nil {
			return fmt.Errorf("%s files: %w", n.name(), err)
		}
		if err := host.EnsureCgroupPath(n.cgroupRoot()); err != nil {
			return fmt.Errorf("%s cgroups: %w", n.name(), err)
		}
		ctrOK := func(ctx context.Context) bool {
			_, err := host.Run(ctx, 5*time.Second, "ctr", "--address", n.sock(d), "version")
			return err == nil
		}
		if err := startInAndWait(ctx, d, n.proc("containerd"), n.netns(),
			[]string{"/usr/bin/containerd", "--config", filepath.Join(n.dir(d), "containerd", "config.toml")}, env, step, ctrOK); err != nil {
			return err
		}
		if err := importImages(ctx, n.sock(d), images); err != nil {
			return fmt.Errorf("%s images: %w", n.name(), err)
		}
		kubeletArgs := []string{st.Binaries[Kubelet], "--config=" + filepath.Join(n.dir(d), "kubelet-config.yaml"),
			"--kubeconfig=" + d.componentKubeconfig(n.name()), "--root-dir=" + filepath.Join(n.dir(d), "kubelet"),
			"--hostname-override=" + n.name(), "--node-ip=" + n.ip(), "--node-labels=" + RealNodeLabel + "=real"}
		if err := startInAndWait(ctx, d, n.proc("kubelet"), n.netns(), kubeletArgs, env, step, nsHTTPOK(n.netns(), "http://127.0.0.1:10248/healthz")); err != nil {
			return err
		}
		if err := startInAndWait(ctx, d, n.proc("kube-proxy"), n.netns(),
			[]string{st.Binaries[KubeProxy], "--config=" + filepath.Join(n.dir(d), "kube-proxy.yaml")}, env, step,
			nsHTTPOK(n.netns(), "http://127.0.0.1:10256/healthz")); err != nil {
			return err
		}
	}
	if err := waitNodesReady(ctx, client, RealNodeLabel+"=real", len(nodes)); err != nil {
		return err
	}
	cidrs := map[int]string{}
	for _, n := range nodes {
		node, err := client.CoreV1().Nodes().Get(ctx, n.name(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		cidrs[n.index] = node.Spec.PodCIDR
	}
	if err := addPodRoutes(ctx, cidrs, nodes); err != nil {
		return fmt.Errorf("pod routes: %w", err)
	}
	step("%d real nodes Ready, pod CIDRs routed %v", len(nodes), cidrs)
	if err := seedRegistry(ctx, agent); err != nil {
		return fmt.Errorf("seeding the registry: %w", err)
	}
	step("registry %s seeded (%d images)", RegistryHost(), len(RegistryImages()))
	return nil
}

// nsHTTPOK checks a URL that only answers inside a namespace (a component's loopback health port).
func nsHTTPOK(ns, url string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		_, err := host.RunIn(ctx, 5*time.Second, nil, ns, "curl", "-sf", "--max-time", "2", url)
		return err == nil
	}
}

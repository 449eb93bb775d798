package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// Up starts the lab (or completes a partly started one) and waits until it is ready: it walks the lab's plan
// (NewPlan) forward, starting each component and waiting for its health check and what follows it — control
// plane healthy, the default ServiceAccount present, every kwok node Ready, real nodes Ready and routed. It is
// safe to run twice.
func Up(ctx context.Context, d Dirs, c Config, progress Progress) (*State, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the lab needs root: it creates a network namespace, mounts etcd's storage and runs Kubernetes components")
	}
	if err := c.CheckHost(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	step := func(format string, args ...any) {
		progress("[%5.1fs] %s", time.Since(t0).Seconds(), fmt.Sprintf(format, args...))
	}
	if old, err := d.loadState(); err == nil {
		if !reflect.DeepEqual(old.Config, c) {
			return nil, errors.New("a lab with different settings is already up: run `kubeslow lab down` first")
		}
		step("lab already recorded in %s: checking its components", d.State)
	}

	var with []string
	if c.Ingress == IngressTraefik {
		with = append(with, Traefik)
	}
	if c.RealNodes > 0 && cniOf(&c) == CNIFlannel {
		with = append(with, Flannel)
	}
	man, err := Build(ctx, d, progress, with...)
	if err != nil {
		return nil, err
	}
	if c.RealNodes > 0 {
		warnDiskHeadroom(d, step)
	}
	st := &State{Config: c, Started: time.Now().UTC(), Binaries: map[string]string{}, Versions: map[string]string{}}
	for _, comp := range append([]string{Etcd, KubeAPIServer, KubeControllerMgr, KubeScheduler, Kwok, Kubelet, KubeProxy, CoreDNS}, with...) {
		p, err := man.Binary(comp)
		if err != nil {
			return nil, err
		}
		st.Binaries[comp] = p
		st.Versions[comp] = man.Components[comp].Version
	}
	if c.Prometheus {
		for comp, name := range map[string]string{PrometheusComponent: "prometheus", NodeExporterComponent: "prometheus-node-exporter"} {
			path, err := exec.LookPath(name)
			if err != nil {
				return nil, fmt.Errorf("--prometheus needs Debian's %s (hack/deps.sh installs it): %w", name, err)
			}
			st.Binaries[comp] = path
		}
	}
	plan, err := NewPlan(d, c, st.Binaries)
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{d.State, d.PKIDir(), d.LogDir(), d.ProcDir(), d.ConfDir(), d.EtcdDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	for _, h := range host.Hierarchies() {
		st.Cgroups = append(st.Cgroups, host.LabCgroup(h))
	}
	if c.Etcd.Kind != "dir" {
		st.Mounts = []string{d.EtcdDir()}
	}
	// Record before creating anything, so that `lab down` can undo a half-finished start.
	if err := d.saveState(st); err != nil {
		return nil, err
	}
	// The client is made by the pki step, once the admin kubeconfig exists.
	if err := plan.run(ctx, &upRun{d: d, c: &c, st: st, step: step}); err != nil {
		return nil, err
	}
	step("lab up: kubeconfig %s, audit log %s", d.AdminKubeconfig(), d.AuditLog())
	return st, nil
}

// startInAndWait starts a component in network namespace ns with environment env (unless it runs) and waits
// for its health check, failing fast if the process dies meanwhile.
func startInAndWait(ctx context.Context, d Dirs, name, ns string, argv, env []string, step func(string, ...any), healthy func(context.Context) bool) error {
	rec, err := d.procs().Start(name, ns, argv, env)
	if err != nil {
		return err
	}
	step("%s started (pid %d)", name, rec.PID)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !rec.Alive() {
			return false, fmt.Errorf("%s exited; last lines of %s:\n%s", name, rec.Log, host.Tail(rec.Log, 15))
		}
		return healthy(ctx), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", name, err)
	}
	step("%s healthy", name)
	return nil
}

// httpOK checks that a URL answers 200. TLS is not verified: this only asks a component on the lab's own
// address whether it is up.
func httpOK(url string) func(context.Context) bool {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // health probe of the lab's own components
	return func(ctx context.Context) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

func readyz(c kubernetes.Interface) func(context.Context) bool {
	return func(ctx context.Context) bool {
		_, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil
	}
}

// AdminRESTConfig returns a client configuration for the lab with generous client-side limits (the lab is
// kubeslow's own; measurements set their own limits).
func AdminRESTConfig(d Dirs) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", d.AdminKubeconfig())
	if err != nil {
		return nil, fmt.Errorf("lab kubeconfig: %w (is the lab up?)", err)
	}
	cfg.QPS, cfg.Burst, cfg.UserAgent = 200, 400, "kubeslow-lab"
	return cfg, nil
}

// AdminClient returns a clientset for the lab.
func AdminClient(d Dirs) (kubernetes.Interface, error) {
	cfg, err := AdminRESTConfig(d)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// mountEtcdStorage mounts a tmpfs (default) or the given block device on the etcd directory.
func mountEtcdStorage(ctx context.Context, d Dirs, c *Config, st *State) error {
	switch c.Etcd.Kind {
	case "loop":
		if !host.IsMountpoint(d.EtcdDir()) {
			dev, err := host.LoopDisk(ctx, etcdDiskImage(d), 4<<30)
			if err != nil {
				return err
			}
			st.LoopDevice = dev
			if err := d.saveState(st); err != nil {
				return err
			}
			if _, err := host.Run(ctx, host.Short, "mount", dev, d.EtcdDir()); err != nil {
				return err
			}
		}
	case "dir":
		return os.MkdirAll(etcdDataDir(d, c), 0o700)
	case "device":
		if !host.IsMountpoint(d.EtcdDir()) {
			if _, err := host.Run(ctx, host.Short, "mount", c.Etcd.Path, d.EtcdDir()); err != nil {
				return fmt.Errorf("%w (the device needs a filesystem, e.g. mkfs.ext4)", err)
			}
		}
	default:
		if !host.IsMountpoint(d.EtcdDir()) {
			size := int64(4 << 30)
			if c.EtcdQuotaBytes+(1<<30) > size {
				size = c.EtcdQuotaBytes + (1 << 30)
			}
			if _, err := host.Run(ctx, host.Short, "mount", "-t", "tmpfs", "-o", "mode=0700,size="+strconv.FormatInt(size, 10), "kubeslow-etcd", d.EtcdDir()); err != nil {
				return err
			}
		}
	}
	return os.MkdirAll(etcdDataDir(d, c), 0o700)
}

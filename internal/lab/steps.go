package lab

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// sbinPath is added to the PATH of the real nodes' processes (containerd, kubelet and kube-proxy call
// iptables, mount, ... from there).
const sbinPath = "PATH+=/usr/local/sbin:/usr/sbin:/sbin"

// hostSteps prepare the host: the network namespace, the PKI and etcd's storage.
func hostSteps(d Dirs, c *Config) []Step {
	storage := fmt.Sprintf("etcd's data on %s, mounted at %s", c.Etcd, d.EtcdDir())
	if c.Etcd.Kind == "dir" {
		storage = "etcd's data in " + etcdDataDir(d, c)
	}
	if c.EtcdWriteIOPS > 0 {
		storage += fmt.Sprintf("; etcd's writes to that device throttled to %d IOPS (blkio cgroup %s)", c.EtcdWriteIOPS, host.ProcessCgroup("blkio", Etcd))
	}
	return []Step{
		{Name: "network", What: fmt.Sprintf("network namespace %s with bridge %s (%s/%d, the control plane's address), uplink %s (%s) <-> %s (%s), host routes to %s through it",
			NetNS, Bridge, ControlPlaneIP, NodeNetPrefix, HostVeth, HostLinkIP, UplinkVeth, UplinkIP, strings.Join(hostRoutes, ", ")),
			Do: func(ctx context.Context, u *upRun) error {
				if err := setupNetwork(ctx); err != nil {
					return err
				}
				u.step("network namespace %s ready (control plane %s, host link %s)", NetNS, ControlPlaneIP, HostLinkIP)
				return nil
			}},
		{Name: "pki", What: "CA, serving and client certificates and the components' kubeconfigs in " + d.PKIDir(),
			Do: func(_ context.Context, u *upRun) error {
				if err := ensurePKI(u.d); err != nil {
					return err
				}
				if err := ensureKubeconfigs(u.d); err != nil {
					return err
				}
				// The steps after this one talk to the apiserver with the admin kubeconfig just written.
				client, err := AdminClient(u.d)
				if err != nil {
					return err
				}
				u.client = client
				u.step("PKI and kubeconfigs in %s", u.d.PKIDir())
				return nil
			}},
		{Name: "etcd-storage", What: storage, Do: func(ctx context.Context, u *upRun) error {
			if err := mountEtcdStorage(ctx, u.d, u.c, u.st); err != nil {
				return err
			}
			if u.c.EtcdWriteIOPS > 0 {
				if err := host.ThrottleWrites(host.ProcessCgroup("blkio", Etcd), u.d.EtcdDir(), u.c.EtcdWriteIOPS); err != nil {
					return err
				}
				u.step("etcd writes throttled to %d IOPS on its device (blkio cgroup)", u.c.EtcdWriteIOPS)
			}
			return nil
		}},
	}
}

// getOK is a health check: GET url answers 200 (TLS not verified: it only asks a lab component whether it is up).
func getOK(url string) Check {
	ok := httpOK(url)
	return Check{What: "GET " + url + " answers 200", OK: func(ctx context.Context, _ *upRun) bool { return ok(ctx) }}
}

// controlPlaneSteps start etcd, the apiserver, the controller-manager, the scheduler and kwok, and create
// the kwok nodes.
func controlPlaneSteps(d Dirs, c *Config, bin func(string) string) ([]Step, error) {
	stages, err := kwokStages(c.Kwok)
	if err != nil {
		return nil, err
	}
	cp := func(name string, argv []string, health Check, files ...File) *Component {
		return &Component{Name: name, Namespace: NetNS, Argv: argv, Health: health, Files: files}
	}
	steps := []Step{
		{Name: Etcd, Component: cp(Etcd, etcdArgs(d, c, bin(Etcd)), getOK(EtcdEndpoint()+"/health"))},
		{Name: KubeAPIServer, Component: cp(KubeAPIServer, apiserverArgs(d, c, bin(KubeAPIServer)),
			Check{What: "GET /readyz with the admin kubeconfig succeeds", OK: func(ctx context.Context, u *upRun) bool { return readyz(u.client)(ctx) }},
			File{Path: auditPolicyPath(d), Data: auditPolicy, Mode: 0o644}),
			What: "kube-apiserver and etcd share the cgroup " + controlPlaneCgroupName + " below the lab's in the cpu and cpuacct hierarchies " +
				"(the lab's CPU counters of the control plane; a scenario may set its CFS quota)",
			Do: func(_ context.Context, u *upRun) error {
				joined, err := JoinControlPlaneCgroups(u.d)
				if err != nil {
					return err
				}
				u.step("kube-apiserver and etcd in cgroups %s", strings.Join(joined, ", "))
				return nil
			}},
		{Name: KubeControllerMgr, Component: cp(KubeControllerMgr, controllerManagerArgs(d, c, bin(KubeControllerMgr)),
			getOK(fmt.Sprintf("https://%s:10257/healthz", ControlPlaneIP)))},
		{Name: KubeScheduler, Component: cp(KubeScheduler, schedulerArgs(d, c, bin(KubeScheduler)),
			getOK(fmt.Sprintf("https://%s:10259/readyz", ControlPlaneIP)), schedulerConfig(d, c))},
		// Nothing that follows needs it before lab up's end (nodes, DNS objects and static pods do not; the
		// steps that create pods wait for it): it is waited for beside them.
		{Name: "default-serviceaccount", What: "the default ServiceAccount exists (the control plane is up)", Background: true,
			Do: func(ctx context.Context, u *upRun) error {
				if err := waitDefaultServiceAccount(ctx, u.client); err != nil {
					return err
				}
				u.step("default ServiceAccount present: control plane up")
				return nil
			}},
	}
	kwok := Step{Name: Kwok, Component: cp(Kwok, kwokArgs(d, bin(Kwok)), getOK(fmt.Sprintf("http://%s:%d/healthz", ControlPlaneIP, KwokPort)),
		File{Path: kwokStagesPath(d), Data: string(stages), Mode: 0o644})}
	if n := c.Nodes; n > 0 {
		kwok.What = fmt.Sprintf("%d simulated nodes created (%s..%s) and Ready, each holding its Lease in kube-node-lease", n, KwokNodeName(1), KwokNodeName(n))
		kwok.Do = func(ctx context.Context, u *upRun) error {
			if err := ensureKwokNodes(ctx, u.client, n); err != nil {
				return err
			}
			u.step("%d kwok nodes created; waiting for Ready", n)
			if err := waitNodesReady(ctx, u.client, KwokNodeLabel+"="+KwokNodeLabelValue, n); err != nil {
				return err
			}
			u.step("%d kwok nodes Ready", n)
			return nil
		}
	}
	return append(steps, kwok), nil
}

// realNodeSteps start CoreDNS, the registry and the real nodes (containerd, kubelet, kube-proxy each), and
// route the pod network between them.
func realNodeSteps(d Dirs, c *Config, bin func(string) string) ([]Step, error) {
	agent := c.AgentBinary
	if agent == "" {
		return nil, errors.New("real nodes need the kubeslow binary for the lab images (Config.AgentBinary)")
	}
	inLab := func(name string, argv []string, health Check, files ...File) *Component {
		return &Component{Name: name, Namespace: NetNS, Argv: argv, Env: []string{sbinPath}, Health: health, Files: files}
	}
	replicas := c.DNS.Replicas > 0
	dnsEndpoints, corednsImage := "its EndpointSlice (the CoreDNS process)", ""
	if replicas {
		dnsEndpoints, corednsImage = "its selector "+DNSPodLabel+"="+dnsPodValue+" (the EndpointSlice controller's)", bin(CoreDNS)
	}
	steps := []Step{
		{Name: "dns-objects", What: fmt.Sprintf("record which of %s exist; CoreDNS's RBAC, the kube-dns Service (%s) and %s; CoreDNS's certificate and kubeconfig",
			strings.Join(hostPathsOwned, ", "), ClusterDNSIP, dnsEndpoints),
			Do: func(ctx context.Context, u *upRun) error {
				if u.st.HostPaths == nil { // the kubeadm layout's control-plane node recorded them before it started
					u.st.HostPaths = missingHostPaths()
					if err := u.d.saveState(u.st); err != nil {
						return err
					}
				}
				if err := ensureDNSObjects(ctx, u.client, replicas); err != nil {
					return fmt.Errorf("DNS objects: %w", err)
				}
				if err := ensureCert(u.d, certSpec{Name: "coredns", CN: corednsUser}); err != nil {
					return err
				}
				return writeKubeconfig(u.d, u.d.componentKubeconfig("coredns"), "coredns")
			}},
		dnsServerStep(d, c, bin, inLab),
		// The registry is the kubeslow binary itself, as a lab process.
		{Name: "registry", Component: inLab("registry", []string{agent, "lab", "registry-serve", "--addr", RegistryHost(), "--dir", filepath.Join(d.State, "registry"),
			"--bytes-per-second", fmt.Sprint(c.Registry.BytesPerSecond), "--latency", c.Registry.Latency.String()},
			getOK("http://"+RegistryHost()+"/v2/"))},
		{Name: "images", What: fmt.Sprintf("images %s and %s from %s%s%s, in one archive under %s", AgentImage, PauseImage, agent,
			map[bool]string{true: ", " + CoreDNSImage + " from " + corednsImage}[replicas],
			map[bool]string{true: ", " + TraefikImage + " from " + bin(Traefik)}[c.Ingress == IngressTraefik], filepath.Join(d.State, "images")),
			Do: func(_ context.Context, u *upRun) error {
				images, err := buildLabImages(u.d, agent, corednsImage, traefikImages(c, bin)...)
				if err != nil {
					return err
				}
				u.images = images
				u.step("lab images %s and %s built from %s", AgentImage, PauseImage, agent)
				return nil
			}},
		// The registry's seed images are for the pull scenarios' pods, which come after lab up: they are pushed
		// beside the real nodes' start.
		{Name: "registry-seed", What: fmt.Sprintf("%d images pushed to the registry %s", len(RegistryImages()), RegistryHost()), Background: true,
			Do: func(ctx context.Context, u *upRun) error {
				if err := seedRegistry(ctx, agent); err != nil {
					return fmt.Errorf("seeding the registry: %w", err)
				}
				u.step("registry %s seeded (%d images)", RegistryHost(), len(RegistryImages()))
				return nil
			}},
	}
	var nodes []realNode
	for i := 1; i <= c.RealNodes; i++ {
		n := realNode{i}
		nodes = append(nodes, n)
		in := func(name string, argv []string, health Check, files ...File) *Component {
			return &Component{Name: n.proc(name), Namespace: n.netns(), Argv: argv, Env: []string{sbinPath}, Health: health, Files: files}
		}
		if c.NodeDisk.Loop && i == 1 {
			steps = append(steps, Step{Name: n.name() + "-disk", What: fmt.Sprintf("%s on an ext4 filesystem on a loop device backed by %s (%d MiB)",
				n.dir(d), nodeDiskImage(d), max(c.NodeDisk.SizeBytes, 0)>>20),
				Do: func(ctx context.Context, u *upRun) error { return mountNodeDisk(ctx, u.d, c, n) }})
		}
		steps = append(steps,
			Step{Name: n.name(), What: fmt.Sprintf("network namespace %s with eth0 %s/%d on the lab bridge (port %s), default route via %s; "+
				"its certificates, kubeconfigs and directories under %s; cgroup %s in every hierarchy%s",
				n.netns(), n.ip(), NodeNetPrefix, n.bridgePort(), ControlPlaneIP, n.dir(d), n.cgroupRoot(),
				map[bool]string{true: "; its pods' UDP to the DNS upstream " + UpstreamDNSIP + " masqueraded to " + n.ip() + " (iptables nat POSTROUTING)"}[replicas]),
				Do: func(ctx context.Context, u *upRun) error {
					if err := setupNodeNetwork(ctx, n); err != nil {
						return fmt.Errorf("network: %w", err)
					}
					if err := nodeFiles(u.d, n); err != nil {
						return fmt.Errorf("files: %w", err)
					}
					if err := host.EnsureCgroupPath(n.cgroupRoot()); err != nil {
						return fmt.Errorf("cgroups: %w", err)
					}
					if replicas {
						if err := masqueradeToUpstream(ctx, n); err != nil {
							return fmt.Errorf("masquerade to the DNS upstream: %w", err)
						}
					}
					return nil
				}},
			Step{Name: n.proc("containerd"),
				Component: in("containerd", []string{"/usr/bin/containerd", "--config", filepath.Join(n.dir(d), "containerd", "config.toml")},
					Check{What: "`ctr --address " + n.sock(d) + " version` succeeds", OK: func(ctx context.Context, u *upRun) bool {
						_, err := host.Run(ctx, 5*time.Second, "ctr", "--address", n.sock(u.d), "version")
						return err == nil
					}},
					File{Path: filepath.Join(n.dir(d), "containerd", "config.toml"), Data: containerdConfig(d, c, n), Mode: 0o644},
					File{Path: filepath.Join(n.dir(d), "cni", "template.conflist"), Data: cniTemplate(d, n), Mode: 0o644}),
				What: "the lab images imported into its k8s.io namespace",
				Do: func(ctx context.Context, u *upRun) error {
					if err := importImages(ctx, n.sock(u.d), u.images); err != nil {
						return fmt.Errorf("images: %w", err)
					}
					return nil
				}},
			Step{Name: n.proc("kubelet"), Component: in("kubelet", []string{bin(Kubelet), "--config=" + filepath.Join(n.dir(d), "kubelet-config.yaml"),
				"--kubeconfig=" + d.componentKubeconfig(n.name()), "--root-dir=" + filepath.Join(n.dir(d), "kubelet"),
				"--hostname-override=" + n.name(), "--node-ip=" + n.ip(), "--node-labels=" + RealNodeLabel + "=real"},
				nsGetOK(n.netns(), "http://127.0.0.1:10248/healthz"),
				File{Path: filepath.Join(n.dir(d), "kubelet-config.yaml"), Data: kubeletConfig(d, c, n), Mode: 0o644},
				// Pods with dnsPolicy Default never see the host's resolver.
				File{Path: filepath.Join(n.dir(d), "resolv.conf"), Data: "nameserver " + ClusterDNSIP + "\n", Mode: 0o644})},
			Step{Name: n.proc("kube-proxy"), Component: in("kube-proxy", []string{bin(KubeProxy), "--config=" + filepath.Join(n.dir(d), "kube-proxy.yaml")},
				nsGetOK(n.netns(), "http://127.0.0.1:10256/healthz"),
				File{Path: filepath.Join(n.dir(d), "kube-proxy.yaml"), Data: kubeProxyConfig(d, c, n), Mode: 0o644})},
		)
		if cniOf(c) == CNIFlannel {
			steps = append(steps, flannelSteps(d, c, n, bin)...)
		}
	}
	steps = append(steps,
		Step{Name: "pod-routes", What: fmt.Sprintf("the %d real nodes Ready; each node's pod CIDR routed to it from the control plane%s", len(nodes),
			map[bool]string{true: " and the other nodes", false: " (the nodes reach each other's pods through flannel.1)"}[cniOf(c) != CNIFlannel]),
			Do: func(ctx context.Context, u *upRun) error {
				if err := waitNodesReady(ctx, u.client, RealNodeLabel+"=real", len(nodes)); err != nil {
					return err
				}
				cidrs := map[int]string{}
				for _, n := range nodes {
					node, err := u.client.CoreV1().Nodes().Get(ctx, n.name(), metav1.GetOptions{})
					if err != nil {
						return err
					}
					cidrs[n.index] = node.Spec.PodCIDR
				}
				if err := addPodRoutes(ctx, cidrs, nodes, cniOf(u.c) != CNIFlannel); err != nil {
					return fmt.Errorf("pod routes: %w", err)
				}
				u.step("%d real nodes Ready, pod CIDRs routed %v", len(nodes), cidrs)
				return nil
			}})
	if replicas {
		steps = append(steps, Step{Name: "dns-deployment", What: fmt.Sprintf("CoreDNS's ServiceAccount, ConfigMap (Corefile) and Deployment %s/%s of %d replicas (%s), "+
			"each Ready and published in the kube-dns EndpointSlices", "kube-system", CoreDNSDeployment, c.DNS.Replicas, placementName(c.DNS.Placement)),
			AfterBackground: true, // its pods need the ServiceAccount
			Do: func(ctx context.Context, u *upRun) error {
				if err := ensureDNSDeployment(ctx, u.client, u.c.DNS); err != nil {
					return err
				}
				u.step("%d CoreDNS replicas Ready (%s)", u.c.DNS.Replicas, placementName(u.c.DNS.Placement))
				return nil
			}})
	}
	if c.Ingress == IngressTraefik {
		ts := traefikStep()
		ts.AfterBackground = true // its pods need the ServiceAccount
		steps = append(steps, ts)
	}
	return steps, nil
}

// dnsServerStep starts the cluster DNS's process: CoreDNS itself, or with replicas the upstream for
// ExternalZone (on its own address of the lab bridge).
func dnsServerStep(d Dirs, c *Config, bin func(string) string, inLab func(string, []string, Check, ...File) *Component) Step {
	if c.DNS.Replicas == 0 {
		return Step{Name: CoreDNS, Component: inLab(CoreDNS, []string{bin(CoreDNS), "-conf", corefilePath(d)},
			getOK(fmt.Sprintf("http://%s:%d/ready", ControlPlaneIP, corednsReadyPort)),
			File{Path: corefilePath(d), Data: corefile(d, c.DNS), Mode: 0o644})}
	}
	comp := inLab(DNSUpstream, upstreamArgv(c.AgentBinary, c.DNS),
		Check{What: "an A query for a name under " + ExternalZone + " is answered", OK: func(ctx context.Context, _ *upRun) bool { return upstreamAnswers(ctx) }})
	// The address must exist before the upstream binds it.
	comp.Before = addUpstreamAddress
	return Step{Name: DNSUpstream, Component: comp,
		What: fmt.Sprintf("the upstream for %s on %s (a second address of %s), answering each source at most %g queries/s", ExternalZone, UpstreamDNSIP, Bridge, upstreamQPS(c.DNS))}
}

// placementName says how the DNS replicas are placed.
func placementName(p string) string {
	if p == DNSPacked {
		return "packed on " + RealNodeName(1)
	}
	return "spread: topology spread on " + "kubernetes.io/hostname, maxSkew 1"
}

// nsGetOK is a health check on a URL that only answers inside a namespace (a component's loopback health port).
func nsGetOK(ns, url string) Check {
	return Check{What: "GET " + url + " inside " + ns + " answers 200", OK: func(ctx context.Context, _ *upRun) bool {
		// -k: the components' serving certificates are self-signed; this only asks whether they are up.
		_, err := host.RunIn(ctx, 5*time.Second, nil, ns, "curl", "-skf", "--max-time", "2", url)
		return err == nil
	}}
}

// prometheusSteps start node_exporter and Prometheus (Debian's binaries).
func prometheusSteps(d Dirs, c *Config, bin func(string) string) []Step {
	exporter := fmt.Sprintf("%s:%d", ControlPlaneIP, NodeExporterPort)
	cfg := filepath.Join(d.PrometheusDir(), "prometheus.yml")
	var steps []Step
	if c.AgentBinary != "" {
		steps = append(steps, Step{Name: CgroupMetricsComponent, Component: &Component{Name: CgroupMetricsComponent, Namespace: NetNS,
			Argv:   []string{c.AgentBinary, "lab", "cgroup-metrics", "--listen", CgroupMetricsAddr()},
			Health: getOK("http://" + CgroupMetricsAddr() + "/metrics")}})
	}
	return append(steps, []Step{
		{Name: NodeExporterComponent, Component: &Component{Name: NodeExporterComponent, Namespace: NetNS,
			Argv: []string{bin(NodeExporterComponent), "--web.listen-address=" + exporter}, Health: getOK("http://" + exporter + "/metrics")}},
		{Name: PrometheusComponent, Component: &Component{Name: PrometheusComponent, Namespace: NetNS,
			Argv: []string{bin(PrometheusComponent), "--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(d.PrometheusDir(), "data"),
				"--web.listen-address=" + ControlPlaneIP + ":" + strconv.Itoa(PrometheusPort), "--storage.tsdb.retention.time=2d", "--log.level=warn"},
			Files:  prometheusFiles(d, c, cfg),
			Health: getOK(PrometheusURL() + "/-/ready")},
			What: "scraping every " + PrometheusScrapeInterval,
			Do: func(_ context.Context, u *upRun) error {
				u.step("prometheus at %s scraping every %s", PrometheusURL(), PrometheusScrapeInterval)
				return nil
			}},
	}...)
}

// Package lab is the `kubeslow lab` command group: build, start, inspect and stop the local lab cluster.
package lab

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
)

// NewCommand returns `kubeslow lab`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "A real local Kubernetes (etcd, apiserver, controller-manager, scheduler, kwok nodes) to try kubeslow on",
		Long: `The lab runs real Kubernetes components, built from the Go module proxy, inside a network namespace
with addresses from 198.18.0.0/15 (the benchmarking range). It needs root.

Build cache: $KUBESLOW_CACHE_DIR or $XDG_CACHE_HOME/kubeslow. State: $KUBESLOW_STATE_DIR or
$XDG_STATE_HOME/kubeslow/lab.`,
	}
	cmd.AddCommand(newNet(streams), newBuild(streams), newUp(streams), newDown(streams), newStatus(streams), newKubeconfig(streams), newRegistryServe(streams),
		newScenarios(streams), newDNS(streams), newStorm(streams), newCredits(streams), newThrottle(streams), newCgroupMetrics(), newWebhook(streams))
	return cmd
}

func progress(streams common.IOStreams) lab.Progress {
	return func(format string, args ...any) { streams.Progressf(format, args...) }
}

func newBuild(streams common.IOStreams) *cobra.Command {
	var with []string
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the lab's pinned components into the cache (idempotent; verifies what is there)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := lab.DefaultDirs()
			if err != nil {
				return err
			}
			man, err := lab.Build(common.Context(cmd), d, progress(streams), with...)
			if err != nil {
				return err
			}
			return man.WriteTable(streams.Out)
		},
	}
	cmd.Flags().StringSliceVar(&with, "with", nil, "also build these optional components: "+strings.Join(lab.OptionalComponents(), ", ")+
		" (`lab up --ingress traefik` builds Traefik itself; its cold build takes longer than the rest of the lab)")
	return cmd
}

type upFlags struct {
	nodes              int
	etcd               string
	etcdQuota          int64
	etcdWriteIOPS      int
	kcmQPS, schedQPS   float32
	kcmBurst, schedBur int
	podReadyDelay      time.Duration
	podReadyJitter     time.Duration
	slowNodes          []string
	slowNodeDelay      time.Duration
	apiserverArgs      []string
	realNodes          int
	serializePulls     bool
	maxParallelPulls   int
	dnsCacheTTL        time.Duration
	dnsDenialTTL       time.Duration
	dnsReplicas        int
	dnsPlacement       string
	dnsUpstreamQPS     float64
	dnsCPULimit        string
	endpointSliceBatch time.Duration
	registryBPS        int64
	registryLatency    time.Duration
	prometheus         bool
	prometheusRules    string
	cni                string
	ingress            string
	podMTU             int
	proxyMode          string
	scenario           string
	layout             string
	dryRun             bool
}

func (f *upFlags) config() (lab.Config, error) {
	etcd, err := lab.ParseEtcdStorage(f.etcd)
	if err != nil {
		return lab.Config{}, err
	}
	agent, err := os.Executable()
	if err != nil {
		return lab.Config{}, fmt.Errorf("finding the kubeslow binary for the lab images: %w", err)
	}
	c := lab.Config{
		Nodes: f.nodes, Etcd: etcd, EtcdQuotaBytes: f.etcdQuota, EtcdWriteIOPS: f.etcdWriteIOPS, RealNodes: f.realNodes, AgentBinary: agent,
		ImagePulls: lab.ImagePullSettings{Serialize: f.serializePulls, MaxParallel: f.maxParallelPulls},
		DNS: lab.DNSSettings{CacheTTL: lab.Duration{Duration: f.dnsCacheTTL}, DenialTTL: lab.Duration{Duration: f.dnsDenialTTL},
			Replicas: f.dnsReplicas, Placement: f.dnsPlacement, UpstreamQPS: f.dnsUpstreamQPS, CPULimit: f.dnsCPULimit},
		Registry:           lab.RegistrySettings{BytesPerSecond: f.registryBPS, Latency: lab.Duration{Duration: f.registryLatency}},
		ControllerManager:  lab.ClientSettings{QPS: f.kcmQPS, Burst: f.kcmBurst},
		EndpointSliceBatch: lab.Duration{Duration: f.endpointSliceBatch},
		Scheduler:          lab.ClientSettings{QPS: f.schedQPS, Burst: f.schedBur},
		APIServerExtraArgs: f.apiserverArgs, Prometheus: f.prometheus, Layout: f.layout, CNI: f.cni, PodMTU: f.podMTU, ProxyMode: f.proxyMode, Ingress: f.ingress,
		Kwok: lab.KwokSettings{PodReadyDelay: lab.Duration{Duration: f.podReadyDelay}, PodReadyJitter: lab.Duration{Duration: f.podReadyJitter},
			SlowNodes: f.slowNodes, SlowNodeDelay: lab.Duration{Duration: f.slowNodeDelay}},
	}
	if f.prometheusRules != "" {
		b, err := os.ReadFile(f.prometheusRules)
		if err != nil {
			return lab.Config{}, fmt.Errorf("--prometheus-rules: %w", err)
		}
		c.PrometheusRules = string(b)
	}
	if c.Layout == lab.LayoutManaged {
		c.Layout = "" // the default, as a lab recorded before layouts existed
	}
	if c.DNS.Replicas == 0 {
		// Process mode: the Deployment's settings do not apply (and do not make two labs differ).
		c.DNS.Placement, c.DNS.UpstreamQPS = "", 0
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, c.CheckHost()
}

// layoutFor is the layout `lab up` builds: the one asked for, else kubeadm (every tier of kubeslow in reach:
// etcd's metrics, the audit log, the control plane's CPU), else the scenario's only layout, with a line
// saying why.
func layoutFor(sc scenario.Scenario, asked string) (layout, note string) {
	switch {
	case asked != "":
		return asked, ""
	case sc.Supports(lab.LayoutKubeadm) || len(sc.Layouts) == 0:
		return lab.LayoutKubeadm, ""
	default:
		return sc.Layouts[0], fmt.Sprintf("scenario %s runs on the %s layout only: --layout %s", sc.Name, sc.Layouts[0], sc.Layouts[0])
	}
}

func newUp(streams common.IOStreams) *cobra.Command {
	f := &upFlags{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the lab (building what is missing) and wait until it is ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sc, err := scenario.Get(f.scenario)
			if err != nil {
				return err
			}
			layout, note := layoutFor(sc, f.layout)
			if note != "" {
				fmt.Fprintln(streams.ErrOut, note)
			}
			f.layout = layout
			c, err := f.config()
			if err != nil {
				return err
			}
			d, err := lab.DefaultDirs()
			if err != nil {
				return err
			}
			if f.dryRun {
				plan, err := scenario.Plan(d, c, sc)
				if err != nil {
					return err
				}
				if _, err := fmt.Fprint(streams.Out, plan.Render()); err != nil {
					return err
				}
				if sc.Start != nil {
					_, err = fmt.Fprintf(streams.Out, "\nthen the scenario %s starts its load: %s\n", sc.Name, sc.Description)
				}
				return err
			}
			if _, err := scenario.Up(common.Context(cmd), d, c, sc, progress(streams)); err != nil {
				return fmt.Errorf("%w\n(the lab may be partly up: `kubeslow lab status` shows it, `kubeslow lab down` removes it)", err)
			}
			_, err = fmt.Fprintf(streams.Out, "lab is up: kubectl --kubeconfig %s get nodes\n", d.AdminKubeconfig())
			return err
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the lab's plan (every step and component: argv, namespace, files, health check, what it waits for) and start nothing")
	fl.StringVar(&f.scenario, "scenario", "healthy", "fault scenario to reproduce (see `kubeslow lab scenarios`)")
	fl.StringVar(&f.layout, "layout", "", "where the control plane runs: "+lab.LayoutKubeadm+" (the default: static pods with kubeadm's flags on a tainted control-plane node "+
		lab.ControlPlaneNodeName+" with its own kubelet and containerd, so etcd's metrics, the audit log and the components' CPU are in reach) or "+
		lab.LayoutManaged+" (processes outside every node; only the apiserver's endpoint is reachable, as on EKS/GKE/AKS); a --scenario that runs on one layout only "+
		"picks it when --layout is not given; see docs/lab.md")
	fl.IntVar(&f.nodes, "nodes", 10, fmt.Sprintf("number of simulated (kwok) nodes, 0..%d", lab.MaxKwokNodes))
	fl.StringVar(&f.etcd, "etcd-storage", "tmpfs", "etcd data: tmpfs, loop (a loop device the lab makes), dir:/path, or device:/dev/name (a block device with a filesystem)")
	fl.IntVar(&f.etcdWriteIOPS, "etcd-write-iops", 0, "throttle etcd's writes to its data device to this many IOPS (blkio cgroup; needs --etcd-storage loop or device:)")
	fl.Int64Var(&f.etcdQuota, "etcd-quota-bytes", 0, "etcd --quota-backend-bytes (0: etcd's default, 2 GiB)")
	fl.Float32Var(&f.kcmQPS, "controller-manager-qps", 0, "kube-controller-manager --kube-api-qps (0: default 20)")
	fl.IntVar(&f.kcmBurst, "controller-manager-burst", 0, "kube-controller-manager --kube-api-burst (0: default 30)")
	fl.Float32Var(&f.schedQPS, "scheduler-qps", 0, "kube-scheduler clientConnection.qps (0: default 50)")
	fl.IntVar(&f.schedBur, "scheduler-burst", 0, "kube-scheduler clientConnection.burst (0: default 100)")
	fl.DurationVar(&f.podReadyDelay, "kwok-pod-ready-delay", 0, "delay before kwok marks a pod Running")
	fl.DurationVar(&f.podReadyJitter, "kwok-pod-ready-jitter", 0, "extra random delay, up to this much, before kwok marks a pod Running")
	fl.StringSliceVar(&f.slowNodes, "kwok-slow-nodes", nil, "kwok nodes whose pods get --kwok-slow-node-delay instead")
	fl.DurationVar(&f.slowNodeDelay, "kwok-slow-node-delay", 0, "pod-ready delay on --kwok-slow-nodes")
	fl.StringArrayVar(&f.apiserverArgs, "apiserver-arg", nil, "extra kube-apiserver flag (repeatable)")
	fl.IntVar(&f.realNodes, "real-nodes", 1, fmt.Sprintf("real nodes (containerd, runc, kubelet, kube-proxy), each in its own network namespace, 0..%d; with any, CoreDNS and the lab registry run too", lab.MaxRealNodes))
	fl.BoolVar(&f.serializePulls, "serialize-image-pulls", true, "kubelet serializeImagePulls on real nodes (kubelet's default: true)")
	fl.IntVar(&f.maxParallelPulls, "max-parallel-image-pulls", 0, "kubelet maxParallelImagePulls (needs --serialize-image-pulls=false; 0: unlimited)")
	fl.DurationVar(&f.dnsCacheTTL, "dns-cache-ttl", 30*time.Second, "CoreDNS cache TTL for answers")
	fl.DurationVar(&f.dnsDenialTTL, "dns-denial-ttl", 5*time.Second, "CoreDNS cache TTL for negative answers (NXDOMAIN)")
	fl.IntVar(&f.dnsReplicas, "dns-replicas", 0, fmt.Sprintf("run cluster DNS as a CoreDNS Deployment of this many pods on the real nodes (0..%d; 0: one CoreDNS process in the control-plane namespace), "+
		"with an upstream for *.%s on %s answering each source (node) at most --dns-upstream-qps queries/s", lab.MaxDNSReplicas, lab.ExternalZone, lab.UpstreamDNSIP))
	fl.StringVar(&f.dnsPlacement, "dns-placement", lab.DNSSpread, "with --dns-replicas: "+lab.DNSSpread+" (topology spread on kubernetes.io/hostname) or "+lab.DNSPacked+" (every replica on "+lab.RealNodeName(1)+")")
	fl.StringVar(&f.dnsCPULimit, "dns-cpu-limit", "", "with --dns-replicas: the CoreDNS containers' CPU limit (e.g. 20m; empty: none), under which the kernel throttles them (KS-SYSTEM-THROTTLED)")
	fl.Float64Var(&f.dnsUpstreamQPS, "dns-upstream-qps", lab.DefaultUpstreamQPS, "with --dns-replicas: the upstream's limit of queries/s per source address (case B's per-VM limit)")
	fl.DurationVar(&f.endpointSliceBatch, "endpointslice-batch", 0, "kube-controller-manager --endpointslice-updates-batch-period: how long a pod change waits before its EndpointSlice (and DNS name) is updated (0: none)")
	fl.Int64Var(&f.registryBPS, "registry-bytes-per-second", 0, "lab registry download speed per response (0: unlimited)")
	fl.DurationVar(&f.registryLatency, "registry-latency", 0, "lab registry latency added to every request")
	fl.StringVar(&f.cni, "cni", lab.CNIBridge, "the real nodes' pod network: "+lab.CNIBridge+" (Debian's bridge plugin, static routes between the nodes) or "+
		lab.CNIFlannel+" (flannel v"+lab.FlannelVersion+", VXLAN backend, kube subnet manager; flannel.1 at the uplink's MTU - 50)")
	fl.StringVar(&f.ingress, "ingress", "", "an ingress controller on the real nodes: "+lab.IngressTraefik+" (Traefik v"+lab.TraefikVersion+
		", as K3S ships it, a Deployment on "+lab.RealNodeName(lab.TraefikNodeIndex)+" reached at "+lab.TraefikURL()+", with a test Ingress at "+lab.IngressTestPath+")")
	fl.IntVar(&f.podMTU, "pod-mtu", 0, "with --cni flannel: the pods' MTU instead of flannel's (0: flannel's FLANNEL_MTU; MTU scenarios set it wrong)")
	fl.StringVar(&f.proxyMode, "proxy-mode", "", "kube-proxy's mode on the real nodes: "+strings.Join(lab.ProxyModes, ", ")+
		" (empty: "+lab.ProxyIPTables+"); a mode this kernel or host cannot run (IPVS without CONFIG_IP_VS) is refused before anything starts")
	fl.StringVar(&f.prometheusRules, "prometheus-rules", "", "with --prometheus, a rule file the lab's Prometheus evaluates every 5 s (e.g. `kubeslow rules --rate-window 1m`): their alerts fire in the lab")
	fl.BoolVar(&f.prometheus, "prometheus", false, "also run Debian's Prometheus and node_exporter scraping the lab's components (at "+lab.PrometheusURL()+"; see docs/prometheus.md)")
	return cmd
}

func newDown(streams common.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the lab and remove everything it made (processes, mounts, cgroups, namespace, state)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := lab.DefaultDirs()
			if err != nil {
				return err
			}
			if err := lab.Down(common.Context(cmd), d, progress(streams)); err != nil {
				return err
			}
			_, err = fmt.Fprintln(streams.Out, "lab is down")
			return err
		},
	}
}

func newStatus(streams common.IOStreams) *cobra.Command {
	out := common.OutputFlag{Formats: []string{"text", "json"}}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the lab's components, nodes, kubeconfig and audit log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			d, err := lab.DefaultDirs()
			if err != nil {
				return err
			}
			s, err := lab.GetStatus(common.Context(cmd), d)
			if err != nil {
				return err
			}
			if out.Format == "json" {
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return writeStatus(streams, s)
		},
	}
	out.Add(cmd)
	return cmd
}

// layoutLine says where the control plane runs.
func layoutLine(s *lab.Status) string {
	if s.Layout == lab.LayoutKubeadm {
		return fmt.Sprintf("%s (control plane as static pods on node %s, manifests %s)", s.Layout, lab.ControlPlaneNodeName, s.Manifests)
	}
	if s.Layout == "" {
		return lab.LayoutManaged
	}
	return s.Layout + " (control plane outside every node: only the apiserver's endpoint is the cluster's)"
}

func writeStatus(streams common.IOStreams, s *lab.Status) error {
	w := streams.Out
	if len(s.Components) == 0 {
		_, err := fmt.Fprintf(w, "lab: down (state %s)\n", s.StateDir)
		return err
	}
	state := "up"
	if !s.Up {
		state = "DEGRADED (some components are not running)"
	}
	if s.Scenario != "" {
		state += ", scenario " + s.Scenario
	}
	fmt.Fprintf(w, "lab: %s since %s\n  layout     %s\n  apiserver  %s\n  kubeconfig %s\n  audit log  %s\n  etcd       %s (storage %s)\n",
		state, s.Started.Local().Format(time.RFC3339), layoutLine(s), s.APIServer, s.Kubeconfig, s.AuditLog, s.Etcd, s.EtcdData)
	for _, c := range s.Components {
		if c.Name == lab.PrometheusComponent {
			// `kubeslow run --prometheus URL` (and a browser) read it there; see docs/prometheus.md.
			fmt.Fprintf(w, "  prometheus %s\n", lab.PrometheusURL())
			break
		}
	}
	if s.Registry != "" {
		fmt.Fprintf(w, "  registry   %s (plain HTTP; the real nodes pull from it: kubeslow image push %s/kubeslow:dev --insecure)\n", s.Registry, s.Registry)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tVERSION\tPID\tRUNNING\tLOG")
	for _, c := range s.Components {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%s\n", c.Name, c.Version, c.PID, c.Running, c.Log)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.NodesError != "" {
		_, err := fmt.Fprintf(w, "\nnodes: %s\n", s.NodesError)
		return err
	}
	kinds := map[string][2]int{}
	versions := map[string]string{}
	for _, n := range s.Nodes {
		k := kinds[n.Kind]
		k[0]++
		if n.Ready {
			k[1]++
		}
		kinds[n.Kind] = k
		versions[n.Kind] = n.Kubelet + " / " + n.Runtime
	}
	fmt.Fprintln(w)
	for _, kind := range []string{"control-plane", "real", "kwok"} {
		if k, ok := kinds[kind]; ok {
			fmt.Fprintf(w, "nodes (%s): %d, %d Ready  (kubelet/runtime %s)\n", kind, k[0], k[1], versions[kind])
			if s.LeasesError == "" {
				fmt.Fprintf(w, "  leases: %s\n", leaseSummary(s.Nodes, kind))
			}
		}
	}
	if s.LeasesError != "" {
		fmt.Fprintf(w, "leases: %s\n", s.LeasesError)
	}
	return nil
}

// leaseSummary says how the nodes of one kind keep their kube-node-lease Leases: how many hold one, how long
// ago the renewals were, and how many have none or an expired one.
func leaseSummary(nodes []lab.NodeStatus, kind string) string {
	var held, missing, expired int
	var dur, oldest float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, n := range nodes {
		switch {
		case n.Kind != kind:
			continue
		case n.Lease == nil:
			missing++
			continue
		case n.Lease.Expired():
			expired++
			oldest = math.Max(oldest, n.Lease.RenewedAgoSeconds)
		default:
			held++
			lo, hi = math.Min(lo, n.Lease.RenewedAgoSeconds), math.Max(hi, n.Lease.RenewedAgoSeconds)
		}
		dur = n.Lease.DurationSeconds
	}
	if held+expired == 0 {
		return fmt.Sprintf("none (%d nodes without a Lease in kube-node-lease)", missing)
	}
	out := fmt.Sprintf("%d held", held)
	if held > 0 {
		out += fmt.Sprintf(", renewed %.0f-%.0fs ago", lo, hi)
	}
	out += fmt.Sprintf(" (duration %.0fs)", dur)
	if expired > 0 {
		out += fmt.Sprintf(", %d EXPIRED (last renewed up to %.0fs ago)", expired, oldest)
	}
	if missing > 0 {
		out += fmt.Sprintf(", %d without a Lease", missing)
	}
	return out
}

func newKubeconfig(streams common.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of the lab's admin kubeconfig (kubectl --kubeconfig \"$(kubeslow lab kubeconfig)\" ...)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := lab.DefaultDirs()
			if err != nil {
				return err
			}
			s, err := lab.GetStatus(common.Context(cmd), d)
			if err != nil {
				return err
			}
			if s.Kubeconfig == "" {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("the lab is not up (no state in %s): run `kubeslow lab up`", d.State)}
			}
			_, err = fmt.Fprintln(streams.Out, s.Kubeconfig)
			return err
		},
	}
}

func newRegistryServe(streams common.IOStreams) *cobra.Command {
	var addr, dir string
	var bps int64
	var latency time.Duration
	cmd := &cobra.Command{
		Use:    "registry-serve",
		Short:  "Serve the lab's OCI registry (run by `lab up` as a lab process)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			return lab.ServeRegistry(common.Context(cmd), ln, dir, bps, latency, streams.Logger(false))
		},
	}
	cmd.Flags().StringVar(&addr, "addr", lab.RegistryHost(), "listen address")
	cmd.Flags().StringVar(&dir, "dir", "", "blob directory")
	cmd.Flags().Int64Var(&bps, "bytes-per-second", 0, "download speed per response (0: unlimited)")
	cmd.Flags().DurationVar(&latency, "latency", 0, "latency added to every request")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

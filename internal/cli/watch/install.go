package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/cli/rbac"
	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/watch/install"
)

// installFlags are `kubeslow watch install`'s: the cycle's flags (passed on to the in-cluster watch) and where
// and what to install.
type installFlags struct {
	flags
	namespace      string
	dryRun         bool
	image          string
	serviceMonitor string
	nodeAgent      bool
	agentEvery     time.Duration
}

// requestTimeout bounds each request of install and uninstall (an unreachable cluster fails, not hangs).
const requestTimeout = 20 * time.Second

func newInstall(streams common.IOStreams) *cobra.Command {
	f := &installFlags{}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Run kubeslow watch in the cluster: a Deployment with its ServiceAccount, read-only ClusterRole, Service and ServiceMonitor",
		Long: `install applies (create or update), in --namespace (created if missing), what runs kubeslow watch in the
cluster: a ServiceAccount bound by a ClusterRoleBinding to a ClusterRole with the rules of kubeslow rbac's
` + rbac.ReadOnlyRole + `, a Deployment (1 replica) of --image running ` + "`kubeslow watch --listen :8080`" + ` with
the cycle flags given here, a Service exposing port 8080 named metrics, and a ServiceMonitor when the
cluster serves monitoring.coreos.com/v1 (the Prometheus Operator). Every object carries the labels
app.kubernetes.io/managed-by=kubeslow, kubeslow.dev/run=watch-install and kubeslow.dev/watch-namespace=NS;
an object of the same name without them is never changed. --dry-run prints the objects as YAML instead.

` + "`kubeslow watch uninstall`" + ` deletes them (and the namespace, if install created it).
Note: ` + "`kubeslow cleanup`" + ` without --run deletes them too (they carry kubeslow's managed-by label).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.install(common.Context(cmd), streams); err != nil {
				return &common.ExitError{Code: runner.ExitCouldNotRun, Err: err}
			}
			return nil
		},
	}
	f.cluster.Add(cmd)
	f.addCycleFlags(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&f.namespace, "namespace", "n", install.DefaultNamespace, "namespace to install into (created if missing)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the objects as multi-document YAML on stdout; apply nothing")
	fl.StringVar(&f.image, "image", "", "image with the kubeslow binary at /kubeslow to run the watch (default: the lab's with --lab, else this release's)")
	fl.StringVar(&f.serviceMonitor, "service-monitor", "auto", "add a ServiceMonitor: auto (when the cluster serves monitoring.coreos.com/v1), yes, no")
	fl.BoolVar(&f.nodeAgent, "node-agent", false, "keep the node agent running on every real node (a privileged DaemonSet: host network, the host's /proc, /sys "+
		"and /dev/kmsg read-only, eBPF tracers) and let the watch read its reports (a Role in the namespace: pods/log)")
	fl.DurationVar(&f.agentEvery, "node-agent-every", nodeagent.KeptEvery, "with --node-agent: how often each agent reads its node (10s to 1m; each read is one report)")
	return cmd
}

func newUninstall(streams common.IOStreams) *cobra.Command {
	var cf common.ClusterFlags
	var ns string
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Delete what kubeslow watch install made (found by its labels), and its namespace if install created it",
		Long: `uninstall deletes the objects ` + "`kubeslow watch install`" + ` made in --namespace, found by their labels
(app.kubernetes.io/managed-by=kubeslow, kubeslow.dev/run=watch-install, kubeslow.dev/watch-namespace=NS): the
ServiceMonitor, Service, Deployment, the cluster-scoped ClusterRoleBinding and ClusterRole, the
ServiceAccount, then the namespace only if install created it. Nothing else is touched; what is already
gone is not an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := uninstall(common.Context(cmd), streams, &cf, ns); err != nil {
				return &common.ExitError{Code: runner.ExitCouldNotRun, Err: err}
			}
			return nil
		},
	}
	cf.Add(cmd)
	cmd.Flags().StringVarP(&ns, "namespace", "n", install.DefaultNamespace, "namespace install used")
	return cmd
}

// ReadOnlyRules are the rules of `kubeslow rbac`'s read-only ClusterRole, read back from what it prints.
func ReadOnlyRules() ([]rbacv1.PolicyRule, error) {
	ro, bench := rbac.Needs()
	var b bytes.Buffer
	if err := rbac.Write(&b, ro, bench); err != nil {
		return nil, err
	}
	for _, doc := range strings.Split(b.String(), "\n---\n") {
		var cr rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &cr); err != nil {
			return nil, fmt.Errorf("reading kubeslow rbac's ClusterRole: %w", err)
		}
		if cr.Name == rbac.ReadOnlyRole {
			if len(cr.Rules) == 0 {
				return nil, errors.New("kubeslow rbac's " + rbac.ReadOnlyRole + " has no rules")
			}
			return cr.Rules, nil
		}
	}
	return nil, errors.New("kubeslow rbac prints no " + rbac.ReadOnlyRole)
}

// watchArgs are the in-cluster watch's arguments after `watch --listen :8080`.
func (f *installFlags) watchArgs(agentImage string) []string {
	a := []string{"--interval", f.interval.String(), "--for", strconv.Itoa(f.hold), "--window", f.window.String(),
		"--max-series", strconv.Itoa(f.maxSeries)}
	if len(f.only) > 0 {
		a = append(a, "--only", strings.Join(f.only, ","))
	}
	if len(f.skip) > 0 {
		a = append(a, "--skip", strings.Join(f.skip, ","))
	}
	if f.etcd != "" {
		a = append(a, "--etcd-endpoint", f.etcd)
	}
	if agentImage != "" {
		a = append(a, "--agent-image", agentImage)
	}
	if f.nodeAgent {
		a = append(a, "--node-agent", f.namespace)
	}
	return a
}

// options checks the flags and returns what to build (the cluster decides CreateNamespace and ServiceMonitor).
func (f *installFlags) options() (install.Options, error) {
	if errs := validation.IsDNS1123Label(f.namespace); len(errs) > 0 {
		return install.Options{}, fmt.Errorf("--namespace %q: %s", f.namespace, strings.Join(errs, "; "))
	}
	switch f.serviceMonitor {
	case "auto", "yes", "no":
	default:
		return install.Options{}, fmt.Errorf("--service-monitor %q: auto, yes or no", f.serviceMonitor)
	}
	if err := f.validate(); err != nil {
		return install.Options{}, err
	}
	if f.nodeAgent && (f.agentEvery < 10*time.Second || f.agentEvery > nodeagent.MaxWindow) {
		return install.Options{}, fmt.Errorf("--node-agent-every %s: 10s to %s", f.agentEvery, nodeagent.MaxWindow)
	}
	ao := catalogue.Options{Window: f.window, EtcdEndpoint: f.etcd}
	if f.nodeAgent {
		ao.NodeAgent = f.namespace
	}
	if _, err := f.readOnly(ao); err != nil {
		return install.Options{}, err
	}
	img := f.cluster.AgentImage(f.image)
	if img == "" {
		return install.Options{}, install.ErrNoImage
	}
	agent := f.agentImage
	if agent == "" {
		agent = img // the same image holds the binary the agents run
	}
	rules, err := ReadOnlyRules()
	if err != nil {
		return install.Options{}, err
	}
	o := install.Options{Namespace: f.namespace, Image: img, WatchArgs: f.watchArgs(agent), ReadOnlyRules: rules,
		ServiceMonitor: f.serviceMonitor == "yes"}
	if f.nodeAgent {
		o.NodeAgent = nodeagent.KeptDaemonSet(f.namespace, agent, install.Labels(f.namespace), f.agentEvery)
		o.NodeAgentRules = keptRules()
	}
	return o, nil
}

// keptRules are the namespaced rules of reading the kept node agent (nodeagent.KeptSpec's; the nodes, cluster-
// scoped, are in the read-only ClusterRole).
func keptRules() []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, p := range nodeagent.KeptSpec.Permissions {
		if p.Resource != "nodes" {
			out = append(out, rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.Resource}, Verbs: p.Verbs})
		}
	}
	return out
}

// connect returns the clients of the selected cluster, each request bounded, after one request that says
// whether it answers.
func connect(cf *common.ClusterFlags) (install.Clients, error) {
	c, err := cf.Connect()
	if err != nil {
		return install.Clients{}, err
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = requestTimeout
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return install.Clients{}, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return install.Clients{}, err
	}
	cl := install.Clients{Kube: kc, Dynamic: dc, Discovery: kc.Discovery()}
	if _, err := cl.Discovery.ServerVersion(); err != nil {
		return cl, fmt.Errorf("cannot reach the cluster (context %q, %s): %w", c.Context, cfg.Host, err)
	}
	return cl, nil
}

func (f *installFlags) install(ctx context.Context, streams common.IOStreams) error {
	o, err := f.options()
	if err != nil {
		return err
	}
	cl, err := connect(&f.cluster)
	if err != nil {
		if !f.dryRun {
			return err
		}
		// A dry run without a cluster still prints: the namespace is included, the ServiceMonitor as asked.
		// It may exist already: it carries none of kubeslow's labels, so neither uninstall nor cleanup deletes it.
		fmt.Fprintf(streams.ErrOut, "dry run: the cluster was not asked (%v): the Namespace is included without kubeslow's labels (uninstall will keep it)", err)
		if f.serviceMonitor == "auto" {
			fmt.Fprint(streams.ErrOut, ", the ServiceMonitor left out (--service-monitor yes adds it)")
		}
		fmt.Fprintln(streams.ErrOut)
		o.CreateNamespace = true
		obs, err := install.Build(o)
		if err != nil {
			return err
		}
		obs.Namespace.Labels, obs.Namespace.Annotations = nil, nil
		return obs.WriteYAML(streams.Out)
	}
	return f.installWith(ctx, streams, cl, o)
}

// installWith is install on a connected cluster (tests pass fakes).
func (f *installFlags) installWith(ctx context.Context, streams common.IOStreams, cl install.Clients, o install.Options) error {
	exists, err := install.NamespaceExists(ctx, cl.Kube, o.Namespace)
	if err != nil {
		return err
	}
	o.CreateNamespace = !exists
	if exists {
		fmt.Fprintf(streams.ErrOut, "namespace %s exists: used as it is (uninstall will not delete it)\n", o.Namespace)
	}
	if f.serviceMonitor == "auto" {
		has, why, err := install.HasServiceMonitor(cl.Discovery)
		if err != nil {
			return err
		}
		o.ServiceMonitor = has
		if !has {
			fmt.Fprintf(streams.ErrOut, "ServiceMonitor skipped: %s; Prometheus can scrape service %s/%s port %s instead\n",
				why, o.Namespace, install.Name, install.PortName)
		}
	}
	if f.dryRun {
		return f.write(streams, o)
	}
	obs, err := install.Build(o)
	if err != nil {
		return err
	}
	if err := install.Apply(ctx, cl, obs, func(s string) { fmt.Fprintln(streams.Out, s) }); err != nil {
		return err
	}
	fmt.Fprintf(streams.ErrOut, "kubeslow watch runs in %s: kubectl -n %s port-forward svc/%s %d, then http://127.0.0.1:%d/metrics\n",
		o.Namespace, o.Namespace, install.Name, install.Port, install.Port)
	return nil
}

func (f *installFlags) write(streams common.IOStreams, o install.Options) error {
	obs, err := install.Build(o)
	if err != nil {
		return err
	}
	return obs.WriteYAML(streams.Out)
}

func uninstall(ctx context.Context, streams common.IOStreams, cf *common.ClusterFlags, ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("--namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	cl, err := connect(cf)
	if err != nil {
		return err
	}
	return uninstallWith(ctx, streams, cl, ns)
}

// uninstallWith is uninstall on a connected cluster (tests pass fakes).
func uninstallWith(ctx context.Context, streams common.IOStreams, cl install.Clients, ns string) error {
	has, _, err := install.HasServiceMonitor(cl.Discovery)
	if err != nil {
		return err
	}
	deleted, err := install.Uninstall(ctx, cl, ns, has)
	for _, d := range deleted {
		fmt.Fprintln(streams.Out, "deleted", d)
	}
	if err == nil && len(deleted) == 0 {
		fmt.Fprintf(streams.Out, "nothing to delete: no object of kubeslow watch install in %s\n", ns)
	}
	return err
}

package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The lab's Prometheus (`lab up --prometheus`): Debian's prometheus and prometheus-node-exporter run as lab
// processes in the control-plane namespace, on the control-plane address, stopped by PID like every other lab
// process; the TSDB lives in the state directory. Prometheus scrapes the apiserver (with the lab's admin
// client certificate), etcd, the scheduler and controller-manager, the real nodes' kubelets and cAdvisor,
// CoreDNS and node_exporter every PrometheusScrapeInterval, under job names of its own (discovery does not
// rely on them).
const (
	PrometheusComponent      = "prometheus"
	NodeExporterComponent    = "node-exporter"
	PrometheusPort           = 9090
	NodeExporterPort         = 9100
	PrometheusScrapeInterval = "5s"
)

// PrometheusURL is the lab Prometheus's address, from the host and from inside the lab.
func PrometheusURL() string { return fmt.Sprintf("http://%s:%d", ControlPlaneIP, PrometheusPort) }

// PrometheusDir holds the lab Prometheus's configuration and TSDB.
func (d Dirs) PrometheusDir() string { return filepath.Join(d.State, "prometheus") }

// prometheusConfig renders the scrape configuration for the lab's components.
func prometheusConfig(d Dirs, c *Config) string {
	p := func(f string) string { return filepath.Join(d.PKIDir(), f) }
	tls := func(verify bool) string {
		s := fmt.Sprintf("    tls_config: {ca_file: %q, cert_file: %q, key_file: %q", p("ca.crt"), p("admin.crt"), p("admin.key"))
		if !verify {
			s += ", insecure_skip_verify: true" // self-signed serving certificates of the scheduler and controller-manager
		}
		return s + "}\n"
	}
	job := func(name, scheme, path string, targets []string, tlsConf string) string {
		q := make([]string, len(targets))
		for i, t := range targets {
			q[i] = fmt.Sprintf("%q", t)
		}
		s := fmt.Sprintf("  - job_name: %s\n    scheme: %s\n    metrics_path: %s\n    static_configs: [{targets: [%s]}]\n", name, scheme, path, strings.Join(q, ", "))
		return s + tlsConf
	}
	cp := func(port int) []string { return []string{fmt.Sprintf("%s:%d", ControlPlaneIP, port)} }
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: 1m\nscrape_configs:\n", PrometheusScrapeInterval, PrometheusScrapeInterval)
	b.WriteString(job("lab-apiserver", "https", "/metrics", cp(APIServerPort), tls(true)))
	b.WriteString(job("lab-etcd", "http", "/metrics", cp(EtcdPort), ""))
	b.WriteString(job("lab-scheduler", "https", "/metrics", cp(10259), tls(false)))
	b.WriteString(job("lab-controller-manager", "https", "/metrics", cp(10257), tls(false)))
	b.WriteString(job("lab-node-exporter", "http", "/metrics", cp(NodeExporterPort), ""))
	if c.RealNodes > 0 {
		var kubelets []string
		for i := 1; i <= c.RealNodes; i++ {
			kubelets = append(kubelets, fmt.Sprintf("%s:10250", RealNodeIP(i)))
		}
		b.WriteString(job("lab-kubelet", "https", "/metrics", kubelets, tls(true)))
		b.WriteString(job("lab-cadvisor", "https", "/metrics/cadvisor", kubelets, tls(true)))
		b.WriteString(job("lab-coredns", "http", "/metrics", cp(corednsMetricsPort), ""))
	}
	return b.String()
}

// upPrometheus starts node_exporter and Prometheus (Debian's binaries) and waits until both answer.
func upPrometheus(ctx context.Context, d Dirs, c *Config, st *State, step func(string, ...any)) error {
	bins := map[string]string{}
	for comp, name := range map[string]string{PrometheusComponent: "prometheus", NodeExporterComponent: "prometheus-node-exporter"} {
		path, err := exec.LookPath(name)
		if err != nil {
			return fmt.Errorf("--prometheus needs Debian's %s (hack/deps.sh installs it): %w", name, err)
		}
		bins[comp] = path
		st.Binaries[comp] = path
	}
	if err := os.MkdirAll(filepath.Join(d.PrometheusDir(), "data"), 0o700); err != nil {
		return err
	}
	cfg := filepath.Join(d.PrometheusDir(), "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(prometheusConfig(d, c)), 0o600); err != nil {
		return err
	}
	exporter := fmt.Sprintf("%s:%d", ControlPlaneIP, NodeExporterPort)
	if err := startAndWait(ctx, d, NodeExporterComponent, []string{bins[NodeExporterComponent], "--web.listen-address=" + exporter},
		step, httpOK("http://"+exporter+"/metrics")); err != nil {
		return err
	}
	args := []string{bins[PrometheusComponent], "--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(d.PrometheusDir(), "data"),
		fmt.Sprintf("--web.listen-address=%s:%d", ControlPlaneIP, PrometheusPort), "--storage.tsdb.retention.time=2d", "--log.level=warn"}
	if err := startAndWait(ctx, d, PrometheusComponent, args, step, httpOK(PrometheusURL()+"/-/ready")); err != nil {
		return err
	}
	step("prometheus at %s scraping every %s", PrometheusURL(), PrometheusScrapeInterval)
	return d.saveState(st)
}

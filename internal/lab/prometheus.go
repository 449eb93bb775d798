package lab

import (
	"fmt"
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

// PrometheusRulesFile is where the lab's Prometheus reads Config.PrometheusRules.
func (d Dirs) PrometheusRulesFile() string { return filepath.Join(d.PrometheusDir(), "rules.yml") }

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
	eval, rules := "1m", ""
	if c.PrometheusRules != "" {
		eval = PrometheusScrapeInterval // the rules see every scrape
		rules = fmt.Sprintf("rule_files: [%q]\n", d.PrometheusRulesFile())
	}
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n%sscrape_configs:\n",
		PrometheusScrapeInterval, PrometheusScrapeInterval, eval, rules)
	b.WriteString(job("lab-apiserver", "https", "/metrics", cp(APIServerPort), tls(true)))
	b.WriteString(job("lab-etcd", "http", "/metrics", cp(EtcdPort), ""))
	b.WriteString(job("lab-scheduler", "https", "/metrics", []string{componentHealthAddr(c, KubeSchedulerPort)}, tls(false)))
	b.WriteString(job("lab-controller-manager", "https", "/metrics", []string{componentHealthAddr(c, KubeControllerManagerPort)}, tls(false)))
	b.WriteString(job("lab-node-exporter", "http", "/metrics", cp(NodeExporterPort), ""))
	if c.AgentBinary != "" {
		b.WriteString(job("lab-control-plane-cgroup", "http", "/metrics", cp(CgroupMetricsPort), ""))
	}
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

// prometheusFiles are the lab Prometheus's configuration at cfg and, with Config.PrometheusRules, its rule file.
func prometheusFiles(d Dirs, c *Config, cfg string) []File {
	files := []File{{Path: cfg, Data: prometheusConfig(d, c), Mode: 0o600}}
	if c.PrometheusRules != "" {
		files = append(files, File{Path: d.PrometheusRulesFile(), Data: c.PrometheusRules, Mode: 0o600})
	}
	return files
}

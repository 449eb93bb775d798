package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrometheusConfig renders the lab's scrape configuration and has Debian's promtool check it.
func TestPrometheusConfig(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (hack/deps.sh installs Debian's prometheus)")
	}
	d := Dirs{State: t.TempDir()}
	if err := os.MkdirAll(d.PKIDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := ensurePKI(d); err != nil {
		t.Fatal(err)
	}
	cfg := prometheusConfig(d, &Config{RealNodes: 2, AgentBinary: "/usr/local/bin/kubeslow"})
	for _, want := range []string{"lab-apiserver", "lab-etcd", "lab-kubelet", "lab-cadvisor", "/metrics/cadvisor", "lab-coredns", "lab-node-exporter",
		RealNodeIP(2) + ":10250", "admin.crt", "lab-control-plane-cgroup", CgroupMetricsAddr()} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(prometheusConfig(d, &Config{}), "kubelet") {
		t.Error("kubelet jobs without real nodes")
	}
	path := filepath.Join(d.State, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s\n%s", err, out, cfg)
	}
	if strings.Contains(cfg, "rule_files") || !strings.Contains(cfg, "evaluation_interval: 1m") {
		t.Errorf("rules without PrometheusRules:\n%s", cfg)
	}

	// With a rule file: loaded from the lab's Prometheus directory and evaluated every scrape; promtool checks
	// the configuration with the rules it names.
	c := &Config{Prometheus: true, PrometheusRules: "groups:\n- name: t\n  rules:\n  - alert: Down\n    expr: up == 0\n    for: 10s\n"}
	for _, f := range prometheusFiles(d, c, path) {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.Path, []byte(f.Data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg = prometheusConfig(d, c)
	if !strings.Contains(cfg, "rule_files: [\""+d.PrometheusRulesFile()+"\"]") || !strings.Contains(cfg, "evaluation_interval: "+PrometheusScrapeInterval) {
		t.Errorf("config with rules:\n%s", cfg)
	}
	out, err := exec.Command(promtool, "check", "config", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1 rules found") {
		t.Fatalf("promtool check config with the rule file: %v\n%s\n%s", err, out, cfg)
	}
	if err := (&Config{PrometheusRules: c.PrometheusRules}).Validate(); err == nil || !strings.Contains(err.Error(), "--prometheus") {
		t.Errorf("rules without --prometheus: %v", err)
	}
}

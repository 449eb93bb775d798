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
}

package lab

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubeslow/kubeslow/internal/lab/build"
)

func TestKubeletConfig(t *testing.T) {
	d := Dirs{State: "/state", Cache: "/cache"}
	cases := []struct {
		pulls ImagePullSettings
		want  map[string]any
	}{
		{ImagePullSettings{Serialize: true}, map[string]any{"serializeImagePulls": true, "maxParallelImagePulls": nil}},
		{ImagePullSettings{Serialize: false, MaxParallel: 3}, map[string]any{"serializeImagePulls": false, "maxParallelImagePulls": float64(3)}},
	}
	for _, c := range cases {
		var got map[string]any
		if err := yaml.Unmarshal([]byte(kubeletConfig(d, &Config{ImagePulls: c.pulls}, realNode{2})), &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		if got["cgroupRoot"] != "/kubeslow-lab/pods-lab-node-2" || got["address"] != "198.19.255.12" || got["failCgroupV1"] != false {
			t.Errorf("node identity or cgroup settings wrong: %v", got)
		}
		if dns, _ := got["clusterDNS"].([]any); len(dns) != 1 || dns[0] != ClusterDNSIP {
			t.Errorf("clusterDNS = %v", got["clusterDNS"])
		}
		// Disk space at 5% (the host's shared filesystem), every other signal at kubelet's default:
		// evictionHard replaces the whole default map.
		ev, _ := got["evictionHard"].(map[string]any)
		for k, v := range map[string]string{"memory.available": "100Mi", "nodefs.available": "5%", "nodefs.inodesFree": "5%",
			"imagefs.available": "5%", "imagefs.inodesFree": "5%"} {
			if ev[k] != v {
				t.Errorf("evictionHard[%s] = %v, want %s (all: %v)", k, ev[k], v, ev)
			}
		}
		// Image garbage collection off: the lab's imported images cannot be pulled back.
		if got["imageGCHighThresholdPercent"] != float64(100) || got["imageGCLowThresholdPercent"] != float64(99) {
			t.Errorf("image GC thresholds %v / %v, want 100 / 99 (off)", got["imageGCHighThresholdPercent"], got["imageGCLowThresholdPercent"])
		}
	}
}

func TestContainerdConfigPointsAtLab(t *testing.T) {
	s := containerdConfig(Dirs{State: "/st"}, &Config{}, realNode{1})
	for _, want := range []string{`sandbox_image = "` + PauseImage + `"`, "restrict_oom_score_adj = true", `address = "/st/nodes/lab-node-1/containerd/containerd.sock"`,
		`endpoint = ["http://` + RegistryHost() + `"]`, "SystemdCgroup = false"} {
		if !strings.Contains(s, want) {
			t.Errorf("containerd config lacks %q", want)
		}
	}
}

func TestCorefileTTLs(t *testing.T) {
	s := corefile(Dirs{State: "/st"}, DNSSettings{CacheTTL: Duration{10 * time.Second}, DenialTTL: Duration{2 * time.Second}})
	if !strings.Contains(s, "success 9984 10") || !strings.Contains(s, "denial 9984 2 2") || !strings.Contains(s, "bind "+ControlPlaneIP) {
		t.Fatalf("corefile:\n%s", s)
	}
	def := corefile(Dirs{State: "/st"}, DNSSettings{})
	if !strings.Contains(def, "success 9984 30") || !strings.Contains(def, "denial 9984 5 5") {
		t.Fatalf("default TTLs:\n%s", def)
	}
}

// TestCorefilePlugins: every directive of the lab's Corefiles (the process's and the replicas') is a plugin the
// lab's CoreDNS is built with (build.CoreDNSPlugins): a directive it lacks would stop CoreDNS at start-up.
func TestCorefilePlugins(t *testing.T) {
	for name, cf := range map[string]string{
		"process":  corefile(Dirs{State: "/st"}, DNSSettings{}),
		"replicas": replicaCorefile(DNSSettings{}),
	} {
		depth, seen := 0, 0
		for _, line := range strings.Split(cf, "\n") {
			f := strings.Fields(line)
			if len(f) > 0 && depth == 1 && f[0] != "}" {
				seen++
				if _, ok := build.CoreDNSPlugins[f[0]]; !ok {
					t.Errorf("%s Corefile: directive %q is not among the lab CoreDNS's plugins (build.CoreDNSPlugins)", name, f[0])
				}
			}
			depth += strings.Count(line, "{") - strings.Count(line, "}")
		}
		if depth != 0 || seen < 3 {
			t.Fatalf("%s Corefile not parsed (depth %d, %d directives):\n%s", name, depth, seen, cf)
		}
	}
}

func TestShimSocketFormula(t *testing.T) {
	// containerd 1.6 runtime/v2/shim.SocketAddress: sha256 of filepath.Join(address, namespace, id) under /run/containerd/s.
	sum := sha256.Sum256([]byte("/a/containerd.sock/k8s.io/abc"))
	if got, want := shimSocket("/a/containerd.sock", "k8s.io", "abc"), fmt.Sprintf("/run/containerd/s/%x", sum); got != want {
		t.Fatalf("shimSocket = %s, want %s", got, want)
	}
}

package agent

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseContainerdSandbox(t *testing.T) {
	for _, c := range []struct{ conf, image, addr string }{
		{"version = 2\n[grpc]\n  address = \"/st/n1/containerd.sock\"\n[ttrpc]\n  address = \"/st/n1/containerd.sock.ttrpc\"\n" +
			"[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"kubeslow.local/pause:1\"\n", "kubeslow.local/pause:1", "/st/n1/containerd.sock"},
		{"version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = 'registry.k8s.io/pause:3.10'\n", "registry.k8s.io/pause:3.10", ""},
		{"# sandbox_image = \"commented\"\nversion = 2\n", "", ""},
	} {
		img, addr := ParseContainerdSandbox([]byte(c.conf))
		if img != c.image || addr != c.addr {
			t.Errorf("%q: %q %q", c.conf, img, addr)
		}
	}
}

func FuzzParseContainerdSandbox(f *testing.F) {
	f.Add([]byte("[grpc]\n address = \"/a\"\n[x]\nsandbox_image = \"p:1\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) { ParseContainerdSandbox(b) })
}

// TestReadSandboxOwnRuntime: with two containerds on the machine (the lab's nodes), the agent reads the one
// its own container's shim serves.
func TestReadSandboxOwnRuntime(t *testing.T) {
	proc := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(proc, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range []string{"n1", "n2"} {
		pid := []string{"100", "200"}[i]
		write(pid+"/comm", "containerd\n")
		write(pid+"/cmdline", "/usr/bin/containerd\x00--config\x00/st/"+n+"/config.toml\x00")
		write(pid+"/root/st/"+n+"/config.toml", "[grpc]\n  address = \"/st/"+n+"/sock\"\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"pause-"+n+":1\"\n")
	}
	write("300/comm", "containerd-shim-runc-v2\n")
	write("300/cmdline", "/usr/bin/containerd-shim-runc-v2\x00-namespace\x00k8s.io\x00-address\x00/st/n2/sock\x00")
	// The stat lines as the kernel writes them (52 fields; the parent is the fourth).
	write("300/stat", "300 (containerd-shim) S 1 300 300 0 -1 4194560 1 2 0 0 3 4 0 0 20 0 1 0 17 100000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	write("400/comm", "kubeslow\n")
	write("400/stat", "400 (kubeslow) S 300 400 400 0 -1 4194560 1 2 0 0 3 4 0 0 20 0 1 0 17 100000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	if err := os.Symlink("400", filepath.Join(proc, "self")); err != nil {
		t.Fatal(err)
	}
	sb, err := readSandbox(proc)
	if err != nil || sb.Image != "pause-n2:1" || sb.Source != "/st/n2/config.toml" {
		t.Fatalf("%+v %v", sb, err)
	}
}

// ownShimAddress walks the parents (procfs's stat) until a shim; none on the way, or a stat it cannot read, is "".
func TestOwnShimAddressNone(t *testing.T) {
	proc := t.TempDir()
	rest := " 4194560 1 2 0 0 3 4 0 0 20 0 1 0 17 100000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	for pid, s := range map[string]string{"1": "1 (init) S 0 1 1 0 -1" + rest, "400": "400 (kubeslow) S 1 400 400 0 -1" + rest, "500": "500 (x) S"} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		for f, b := range map[string]string{"comm": "not-a-shim\n", "stat": s} {
			if err := os.WriteFile(filepath.Join(proc, pid, f), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, self := range []string{"400", "500"} {
		os.Remove(filepath.Join(proc, "self"))
		if err := os.Symlink(self, filepath.Join(proc, "self")); err != nil {
			t.Fatal(err)
		}
		if a := ownShimAddress(proc); a != "" {
			t.Errorf("self %s: %q", self, a)
		}
	}
}

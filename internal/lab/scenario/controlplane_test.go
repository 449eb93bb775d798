package scenario

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/lab"
)

func TestProcCgroupsParse(t *testing.T) {
	got, err := parseCgroups([]byte("12:cpu,cpuacct:/a/b\n11:blkio:/kubepods/pod1/c1\n10:name=systemd:/x\n0::/unified/p\nbad line\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "/a/b", "cpuacct": "/a/b", "blkio": "/kubepods/pod1/c1", "name=systemd": "/x", "": "/unified/p"}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func FuzzProcCgroups(f *testing.F) {
	f.Add([]byte("4:pids:/kubeslow-lab/pods-lab-control-plane/kubepods/burstable/pod1/c\n0::/\n"))
	f.Add([]byte(":::\n::\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseCgroups(b)
		if err != nil {
			return
		}
		// Each controller is one key (a comma-joined list is split) and each path is from the input.
		for k, v := range m {
			if strings.Contains(k, ",") || !bytes.Contains(b, []byte(v)) {
				t.Errorf("key %q path %q from %q", k, v, b)
			}
		}
	})
}

// onBlockDevice keeps a device given and puts a tmpfs etcd on the lab's loop device.
func TestOnBlockDevice(t *testing.T) {
	for kind, want := range map[string]string{"": "loop", "tmpfs": "loop", "dir": "loop", "loop": "loop", "device": "device"} {
		c := lab.Config{Etcd: lab.EtcdStorage{Kind: kind, Path: "/x"}}
		onBlockDevice(&c)
		if c.Etcd.Kind != want || want == "device" && c.Etcd.Path != "/x" {
			t.Errorf("%q: %+v, want %s", kind, c.Etcd, want)
		}
	}
}

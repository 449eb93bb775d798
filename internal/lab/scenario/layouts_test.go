package scenario

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/lab"
)

// TestScenarioLayouts: every scenario states the layouts it runs on (known ones only), the control-plane
// scenarios run on both, and a scenario is refused, with the layouts it supports named, on one it does not.
func TestScenarioLayouts(t *testing.T) {
	for _, s := range All() {
		if len(s.Layouts) == 0 {
			t.Errorf("scenario %s states no layout", s.Name)
		}
		for _, l := range s.Layouts {
			if !slices.Contains(lab.Layouts, l) {
				t.Errorf("scenario %s: unknown layout %q", s.Name, l)
			}
		}
	}
	for _, name := range []string{"small-control-plane", "slow-etcd-disk"} {
		s, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Supports(lab.LayoutManaged) || !s.Supports(lab.LayoutKubeadm) || !s.Supports("") {
			t.Errorf("%s supports %v: want both layouts", name, s.Layouts)
		}
	}
	only := Scenario{Name: "managed-only", Layouts: []string{lab.LayoutManaged}, Configure: func(*lab.Config) {}}
	c := lab.Config{Layout: lab.LayoutKubeadm, AgentBinary: "/kubeslow", Etcd: lab.EtcdStorage{Kind: "tmpfs"}}
	_, err := Plan(lab.Dirs{Cache: "/cache", State: "/state"}, c, only)
	if err == nil || !strings.Contains(err.Error(), "does not run on --layout kubeadm") || !strings.Contains(err.Error(), "supports: managed") {
		t.Errorf("managed-only scenario on kubeadm: %v", err)
	}
	if _, err := Plan(lab.Dirs{Cache: "/cache", State: "/state"}, lab.Config{Etcd: lab.EtcdStorage{Kind: "tmpfs"}}, only); err != nil {
		t.Errorf("managed-only scenario on the default layout: %v", err)
	}
}

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
	for _, name := range []string{"small-control-plane", "slow-etcd-disk", "etcd-disk-bandwidth", "list-storm", "conflict-storm"} {
		s, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Supports(lab.LayoutManaged) || !s.Supports(lab.LayoutKubeadm) || !s.Supports("") {
			t.Errorf("%s supports %v: want both layouts", name, s.Layouts)
		}
	}
	// The hog needs the control plane on a node: not the managed layout's.
	if hog, err := Get("control-plane-hog"); err != nil || hog.Supports(lab.LayoutManaged) || !hog.Supports(lab.LayoutKubeadm) {
		t.Errorf("control-plane-hog: %v %v, want kubeadm only", hog.Layouts, err)
	}
	// The scenarios the kubeadm integration test starts one after another on one lab can be stopped.
	for _, name := range []string{"list-storm", "conflict-storm", "slow-etcd-disk", "etcd-disk-bandwidth", "control-plane-hog", "small-control-plane"} {
		if s, err := Get(name); err != nil || s.Start == nil || s.Stop == nil {
			t.Errorf("%s: Start and Stop both wanted (%v)", name, err)
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

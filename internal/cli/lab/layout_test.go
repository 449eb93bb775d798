package lab

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
)

// TestLayoutFor: `lab up` with no --layout builds the kubeadm shape for every scenario that runs there, a
// managed-only scenario's layout (said on a line) for the others, and what --layout asks for otherwise.
func TestLayoutFor(t *testing.T) {
	kubeadmOnly, managedOnly := 0, 0
	for _, sc := range scenario.All() {
		got, note := layoutFor(sc, "")
		switch {
		case sc.Supports(lab.LayoutKubeadm):
			kubeadmOnly++
			if got != lab.LayoutKubeadm || note != "" {
				t.Errorf("%s: layout %q (%q), want kubeadm, said nothing", sc.Name, got, note)
			}
		default:
			managedOnly++
			if got != lab.LayoutManaged || !strings.Contains(note, "--layout managed") || !strings.Contains(note, sc.Name) {
				t.Errorf("%s (layouts %v): layout %q, note %q: want managed, said", sc.Name, sc.Layouts, got, note)
			}
		}
		if got, note := layoutFor(sc, lab.LayoutManaged); got != lab.LayoutManaged || note != "" {
			t.Errorf("%s with --layout managed: %q %q", sc.Name, got, note)
		}
	}
	if kubeadmOnly == 0 || managedOnly == 0 {
		t.Fatalf("scenarios on kubeadm %d, managed-only %d: the test covers both kinds", kubeadmOnly, managedOnly)
	}
}

package run

import (
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/all"
)

// TestNeedsImage: the agent image's notice is said when a selected measurement runs from it, itself or through
// the control-plane node tier, and not for a selection that needs none.
func TestNeedsImage(t *testing.T) {
	for _, c := range []struct {
		o    all.Options
		only []string
		want bool
	}{
		{all.Options{}, nil, true},
		{all.Options{}, []string{"nodes.agent"}, true},
		{all.Options{}, []string{"dns.lookups"}, true},
		{all.Options{}, []string{"etcd.health"}, true}, // without --etcd-endpoint: through the node tier
		{all.Options{EtcdEndpoint: "http://127.0.0.1:2381"}, []string{"etcd.health"}, false},
		{all.Options{}, []string{"pods.startup", "nodes.health"}, false},
	} {
		ms, err := all.Registry(c.o).Select(c.only, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := needsImage(ms); got != c.want {
			t.Errorf("%v %+v: needsImage %v, want %v", c.only, c.o, got, c.want)
		}
	}
}

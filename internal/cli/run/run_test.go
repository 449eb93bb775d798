package run

import (
	"testing"

	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
)

// TestNeedsImage: the agent image's notice is said when a selected measurement runs from it, itself or through
// the control-plane node tier, and not for a selection that needs none.
func TestNeedsImage(t *testing.T) {
	for _, c := range []struct {
		o    catalogue.Options
		only []string
		want bool
	}{
		{catalogue.Options{}, nil, true},
		{catalogue.Options{}, []string{"nodes.agent"}, true},
		{catalogue.Options{NodeAgent: "kubeslow"}, []string{"nodes.agent"}, false}, // reads the kept agents' reports
		{catalogue.Options{}, []string{"dns.lookups"}, true},
		{catalogue.Options{}, []string{"etcd.health"}, true}, // without --etcd-endpoint: through the node tier
		{catalogue.Options{EtcdEndpoint: "http://127.0.0.1:2381"}, []string{"etcd.health"}, false},
		{catalogue.Options{}, []string{"pods.startup", "nodes.health"}, false},
	} {
		ms, err := catalogue.Registry(c.o).Select(c.only, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := needsImage(ms); got != c.want {
			t.Errorf("%v %+v: needsImage %v, want %v", c.only, c.o, got, c.want)
		}
	}
}

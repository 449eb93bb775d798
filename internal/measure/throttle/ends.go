package throttle

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/kubelet"
)

// Ends is the observer skeleton of the measurements that read each real node's cAdvisor at the two ends of
// the run's window (system.throttling, pods.resources): the real nodes, their first scrapes at Start and
// their last at Gather. The scrapes come from the run's shared kubelet.Cadvisor, so each node's kubelet is
// read once per window end whoever reads it.
type Ends struct {
	// Reader names the measurement (each is handed a window end's scrape once).
	Reader string
	// Families are the cAdvisor families the reader keeps (a subset of kubelet.Families).
	Families []string
	// Window is the reader's window: a scrape at most half of it old is shared.
	Window time.Duration
	// NoNode says why no real node is a Skip.
	NoNode string

	// Nodes are the real nodes; First their scrapes at Start.
	Nodes []string
	First map[string]kubelet.Scrape
	src   *kubelet.Cadvisor
}

// Start lists the real nodes (none: a Skip), calls before (when set) and reads the first scrapes; no
// permission for nodes/proxy is a Skip, no node read an error.
func (e *Ends) Start(ctx context.Context, env *measure.Env, before func(context.Context) error) error {
	kubelets, err := env.KubeletNodes(ctx)
	if err != nil {
		return err
	}
	e.Nodes = nil
	for _, n := range kubelets {
		e.Nodes = append(e.Nodes, n.Name)
	}
	if len(e.Nodes) == 0 {
		return measure.Skipf("no real node (%s)", e.NoNode)
	}
	if before != nil {
		if err := before(ctx); err != nil {
			return err
		}
	}
	e.src = CadvisorOf(env)
	first, errs, forbidden := e.src.Read(ctx, e.Reader, kubelet.WindowStart, e.Window/2, e.Nodes, e.Families)
	if forbidden != nil {
		return measure.Skipf("no permission to read the kubelets' cAdvisor through the node proxy (nodes/proxy get): %v", forbidden)
	}
	if len(first) == 0 {
		return fmt.Errorf("no kubelet's /metrics/cadvisor could be read: %s", JoinErrs(errs))
	}
	e.First = first
	return nil
}

// Last reads the last scrapes. Missed are the nodes without a first or a last scrape, errs why; none read
// is an error.
func (e *Ends) Last(ctx context.Context) (last map[string]kubelet.Scrape, missed []string, errs map[string]error, err error) {
	last, errs, _ = e.src.Read(ctx, e.Reader, kubelet.WindowEnd, e.Window/2, e.Nodes, e.Families)
	for _, n := range e.Nodes {
		if _, ok := e.First[n]; !ok {
			missed = append(missed, n)
		} else if _, ok := last[n]; !ok {
			missed = append(missed, n)
		}
	}
	if len(missed) == len(e.Nodes) {
		err = fmt.Errorf("no kubelet's /metrics/cadvisor could be read at the window's end: %s", JoinErrs(errs))
	}
	return last, missed, errs, err
}

// CadvisorOf is env's run's shared cAdvisor scrapes (Env.Cadvisor); an Env without them gets scrapes of its
// own at each call.
func CadvisorOf(env *measure.Env) *kubelet.Cadvisor {
	if env.Cadvisor != nil {
		return env.Cadvisor
	}
	return kubelet.NewCadvisor(env.Client)
}

// JoinErrs is each node's error, "node: error", sorted and joined.
func JoinErrs(errs map[string]error) string {
	var out []string
	for n, e := range errs {
		out = append(out, n+": "+e.Error())
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

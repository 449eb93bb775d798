package lab

import (
	"context"
	"fmt"
	"github.com/kubeslow/kubeslow/internal/lab/build"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/kubernetes"
)

// The lab is a plan of steps built from its Config (NewPlan), in kwok's shape: each step either starts one
// component — a process described by its name, network namespace, argv, environment, the files it reads,
// the health check `lab up` polls and what it waits for next — or does the host or cluster work between
// components (network, certificates, storage, nodes, routes). `lab up` walks the plan forward; `lab down`
// stops the plan's components in reverse (see Down); `lab up --dry-run` prints it (Plan.Render).

// Step is one step of the plan.
type Step struct {
	// Name is the component's name, or the work's ("network", "pki", ...).
	Name string
	// What says what the step does (for work) or what `lab up` waits for after the component is healthy.
	What string
	// Component is the process the step starts (nil for work).
	Component *Component
	// Do is the work: the whole step without a component, the wait after it with one (nil: none).
	Do func(ctx context.Context, u *upRun) error
	// Files are written before Do runs (after the component, if any, is healthy).
	Files []File
	// Background runs the step's Do beside the steps that follow it (a work step only): `lab up` waits for it
	// before a step with AfterBackground and at its end, and fails with its error. For waits and work nothing
	// that follows needs (the default ServiceAccount, the registry's seed images): each takes seconds of every
	// `lab up` that the next steps' own waits can hide.
	Background bool
	// AfterBackground waits for every Background step before this one runs (a step that creates pods).
	AfterBackground bool
}

// Component is one lab process.
type Component struct {
	Name string
	// Namespace is the network namespace it runs in.
	Namespace string
	Argv      []string
	// Env is added to kubeslow's own environment; "PATH+=dirs" appends to PATH.
	Env []string
	// Files are written before it starts.
	Files  []File
	Health Check
	// Before runs before it starts (e.g. adding the address it listens on); nil: nothing.
	Before func(ctx context.Context) error
}

// File is a configuration file a component reads.
type File struct {
	Path string
	Data string
	Mode os.FileMode
}

// Check is a component's health check: What describes it, OK polls it.
type Check struct {
	What string
	OK   func(ctx context.Context, u *upRun) bool
}

// Plan is the ordered steps of a lab.
type Plan struct {
	Config Config
	Steps  []Step
}

// upRun is what the steps of one `lab up` share.
type upRun struct {
	d      Dirs
	c      *Config
	st     *State
	client kubernetes.Interface
	step   func(string, ...any)
	// images is the lab images' archive, once built; cpImages the kubeadm layout's control-plane images.
	images   string
	cpImages []string
}

// NewPlan builds the plan of the lab c from the component binaries bins (component name to path). It only
// computes: nothing is written or started.
func NewPlan(d Dirs, c Config, bins map[string]string) (*Plan, error) {
	p := &Plan{Config: c}
	bin := func(name string) string { return bins[name] }
	for _, name := range plannedBinaries(&c) {
		if bins[name] == "" {
			return nil, fmt.Errorf("no binary for %s", name)
		}
	}
	p.Steps = append(p.Steps, hostSteps(d, &c)...)
	cp, err := controlPlaneSteps(d, &c, bin)
	if err != nil {
		return nil, err
	}
	if c.Kubeadm() {
		// The control plane's four processes are static pods of the control-plane node; kwok follows as before.
		kcp, err := kubeadmSteps(d, &c, bin)
		if err != nil {
			return nil, err
		}
		cp = append(kcp, cp[len(cp)-1])
	}
	p.Steps = append(p.Steps, cp...)
	if c.RealNodes > 0 {
		nodes, err := realNodeSteps(d, &c, bin)
		if err != nil {
			return nil, err
		}
		p.Steps = append(p.Steps, nodes...)
	}
	if c.Prometheus {
		p.Steps = append(p.Steps, prometheusSteps(d, &c, bin)...)
	}
	return p, nil
}

// plannedBinaries are the binaries the plan of c runs (besides the kubeslow binary itself).
func plannedBinaries(c *Config) []string {
	out := []string{Etcd, KubeAPIServer, KubeControllerMgr, KubeScheduler, Kwok}
	if c.RealNodes > 0 {
		out = append(out, CoreDNS, Kubelet, KubeProxy)
	} else if c.Kubeadm() {
		out = append(out, Kubelet, KubeProxy)
	}
	if c.RealNodes > 0 && cniOf(c) == CNIFlannel {
		out = append(out, Flannel)
	}
	if c.RealNodes > 0 && c.Ingress == IngressTraefik {
		out = append(out, Traefik)
	}
	if c.Prometheus {
		out = append(out, NodeExporterComponent, PrometheusComponent)
	}
	return out
}

// Components lists the plan's processes in start order.
func (p *Plan) Components() []*Component {
	var out []*Component
	for _, s := range p.Steps {
		if s.Component != nil {
			out = append(out, s.Component)
		}
	}
	return out
}

// Render prints the plan for `lab up --dry-run`: every step in order, each component with its namespace,
// argv, environment, files, health check and what follows it.
func (p *Plan) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lab plan: layout %s, %d kwok nodes, %d real nodes, etcd on %s", p.Config.LayoutName(), p.Config.Nodes, p.Config.RealNodes, p.Config.Etcd)
	if p.Config.Scenario != "" {
		fmt.Fprintf(&b, ", scenario %s", p.Config.Scenario)
	}
	b.WriteString("\n`lab up` runs these steps in order; `lab down` stops the components in reverse.\n")
	for i, s := range p.Steps {
		if s.Component == nil {
			fmt.Fprintf(&b, "\n%2d. %s: %s%s%s\n", i+1, s.Name, s.What, map[bool]string{true: " (in the background: the steps that follow start meanwhile; lab up waits for it at its end)"}[s.Background],
				map[bool]string{true: " (once the background steps are done)"}[s.AfterBackground])
			for _, f := range s.Files {
				fmt.Fprintf(&b, "    file:   %s (%d bytes)\n", f.Path, len(f.Data))
			}
			continue
		}
		c := s.Component
		fmt.Fprintf(&b, "\n%2d. start %s (network namespace %s)\n", i+1, c.Name, c.Namespace)
		fmt.Fprintf(&b, "    argv:   %s\n", strings.Join(c.Argv, " \\\n            "))
		for _, e := range c.Env {
			fmt.Fprintf(&b, "    env:    %s\n", e)
		}
		for _, f := range c.Files {
			fmt.Fprintf(&b, "    file:   %s (%d bytes)\n", f.Path, len(f.Data))
		}
		fmt.Fprintf(&b, "    health: %s\n", c.Health.What)
		if s.What != "" {
			fmt.Fprintf(&b, "    then:   %s\n", s.What)
		}
	}
	return b.String()
}

// run walks the plan forward: work steps run; component steps write the component's files, start it (unless
// it already runs), poll its health check (failing fast if it exits) and then run the step's wait.
func (p *Plan) run(ctx context.Context, u *upRun) (err error) {
	var bg sync.WaitGroup
	var bgMu sync.Mutex
	var bgErr error
	wait := func() error {
		bg.Wait()
		bgMu.Lock()
		defer bgMu.Unlock()
		return bgErr
	}
	bctx, cancel := context.WithCancel(ctx)
	defer func() {
		if err != nil {
			cancel() // a failed step ends the background ones too, and lab up waits for them before it returns
		}
		if werr := wait(); err == nil {
			err = werr
		}
		cancel()
	}()
	for _, s := range p.Steps {
		if s.AfterBackground {
			if err := wait(); err != nil {
				return err
			}
		}
		if s.Background && s.Component == nil && s.Do != nil {
			if err := writeFiles(s.Files); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			bg.Add(1)
			go func(s Step) {
				defer bg.Done()
				if err := s.Do(bctx, u); err != nil {
					bgMu.Lock()
					if bgErr == nil {
						bgErr = fmt.Errorf("%s: %w", s.Name, err)
					}
					bgMu.Unlock()
				}
			}(s)
			continue
		}
		if err := s.run(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// run runs one step in the foreground: its component's files written, the component started (unless it
// already runs) and its health check polled (failing fast if it exits), then the step's files and its Do.
func (s Step) run(ctx context.Context, u *upRun) error {
	if c := s.Component; c != nil {
		if err := writeFiles(c.Files); err != nil {
			return err
		}
		if c.Before != nil {
			if err := c.Before(ctx); err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
		}
		if err := startInAndWait(ctx, u.d, c.Name, c.Namespace, c.Argv, componentEnv(c.Env), u.step,
			func(ctx context.Context) bool { return c.Health.OK(ctx, u) }); err != nil {
			return err
		}
	}
	if err := writeFiles(s.Files); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	if s.Do != nil {
		if err := s.Do(ctx, u); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return nil
}

// writeFiles writes files (and their directories).
func writeFiles(files []File) error {
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(f.Path, []byte(f.Data), f.Mode); err != nil {
			return err
		}
	}
	return nil
}

// componentEnv is kubeslow's environment with extra's entries added ("PATH+=dirs" appends to PATH).
func componentEnv(extra []string) []string {
	env := os.Environ()
	for _, e := range extra {
		k, v, _ := strings.Cut(e, "=")
		if add, ok := strings.CutSuffix(k, "+"); ok {
			found := false
			for i, kv := range env {
				if strings.HasPrefix(kv, add+"=") {
					env[i], found = kv+":"+v, true
				}
			}
			if !found {
				env = append(env, add+"="+v)
			}
			continue
		}
		env = append(env, e)
	}
	return env
}

// stopOrder is the order `lab down` stops recorded processes in: the plan's components in reverse, after
// any recorded process the plan does not know (a scenario's load, a helper started later). The plan is the
// recorded lab's, or — when its record is lost — the largest lab, so that every component is placed.
func stopOrder(st *State, recorded []string) []string {
	c := Config{Nodes: 1, RealNodes: MaxRealNodes, Prometheus: true, CNI: CNIFlannel}
	if st != nil {
		c = st.Config
	}
	c.AgentBinary = "kubeslow" // only the order matters here
	bins := map[string]string{}
	for _, n := range plannedBinaries(&Config{RealNodes: 1, Prometheus: true, CNI: CNIFlannel, Ingress: IngressTraefik}) {
		bins[n] = n
	}
	var planned []string
	if p, err := NewPlan(Dirs{}, c, bins); err == nil {
		for _, comp := range p.Components() {
			planned = append(planned, comp.Name)
		}
	}
	var out []string
	known := map[string]bool{}
	for _, n := range planned {
		known[n] = true
	}
	rest := append([]string(nil), recorded...)
	sort.Strings(rest)
	for _, n := range rest {
		if !known[n] {
			out = append(out, n)
		}
	}
	have := map[string]bool{}
	for _, n := range recorded {
		have[n] = true
	}
	for i := len(planned) - 1; i >= 0; i-- {
		if have[planned[i]] {
			out = append(out, planned[i])
		}
	}
	return out
}

// PlannedBinaries are the binaries the plan of c would run: the built ones from the manifest, those not built
// yet where `lab build` puts them, and Debian's prometheus and node_exporter from PATH (or where Debian puts
// them). For `lab up --dry-run`: nothing is built or checked.
func PlannedBinaries(d Dirs, c Config) map[string]string {
	bins := build.Planned(d.BuildCache())
	if c.Prometheus {
		for comp, name := range map[string]string{PrometheusComponent: "prometheus", NodeExporterComponent: "prometheus-node-exporter"} {
			bins[comp] = "/usr/bin/" + name
			if p, err := exec.LookPath(name); err == nil {
				bins[comp] = p
			}
		}
	}
	return bins
}

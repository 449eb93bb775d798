// Package build builds the lab's pinned components (Kubernetes, etcd, kwok, CoreDNS) from the Go module proxy
// into a cache directory, verifies them (version output and hash) and records them in a manifest, so that a
// later build only checks what is there.
package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/sync/errgroup"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// Manifest records what `lab build` produced, so a later build can verify and skip it.
type Manifest struct {
	Components map[string]BuiltBinary `json:"components"`
}

// BuiltBinary is one verified binary.
type BuiltBinary struct {
	Version string `json:"version"`
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	// VersionOutput is what `BINARY --version` printed when verified.
	VersionOutput string `json:"versionOutput"`
}

// Progress receives one line per step and a heartbeat while a long step runs.
type Progress func(format string, args ...any)

// Cache is the build cache: binaries, sources, Go's module and build caches, build logs. It survives `lab down`.
type Cache struct{ Dir string }

// DefaultCache is the build cache's default place: $KUBESLOW_CACHE_DIR, else kubeslow under the user's cache
// directory ($XDG_CACHE_HOME, else ~/.cache).
func DefaultCache() (Cache, error) {
	if dir := os.Getenv("KUBESLOW_CACHE_DIR"); dir != "" {
		return Cache{Dir: dir}, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return Cache{}, err
	}
	return Cache{Dir: filepath.Join(c, "kubeslow")}, nil
}

// Paths inside the cache.
func (c Cache) BinDir() string       { return filepath.Join(c.Dir, "bin") }
func (c Cache) SrcDir() string       { return filepath.Join(c.Dir, "src") }
func (c Cache) GoModCache() string   { return filepath.Join(c.Dir, "gomod") }
func (c Cache) GoBuildCache() string { return filepath.Join(c.Dir, "gobuild") }
func (c Cache) LogDir() string       { return filepath.Join(c.Dir, "logs") }

// buildStep builds one or more components from one Go invocation.
type buildStep struct {
	title      string
	components []string
	version    string
	build      func(ctx context.Context, b *builder) error
	// versionArg and versionWant verify a binary: its output for versionArg must contain versionWant.
	versionArg  string
	versionWant string
	// optional steps are built only when asked for by a component's name (Traefik: `lab up --ingress traefik`,
	// `lab build --with traefik`: a cold build of Traefik takes longer than the rest of the lab together;
	// flanneld: `lab up --cni flannel`, `lab build --with flanneld`, ~1.5 min cold that a bridge lab never uses).
	optional bool
}

type builder struct {
	dirs     Cache
	goBin    string
	env      []string
	progress Progress
}

// Build builds every lab component that is missing or fails verification, into the cache directory, and of
// the optional ones (Optional) those named in with. It is idempotent: with a warm cache it only hashes and
// checks what is there.
func Build(ctx context.Context, d Cache, progress Progress, with ...string) (*Manifest, error) {
	for _, w := range with {
		if !slices.Contains(Optional(), w) {
			return nil, fmt.Errorf("no optional lab component %q (optional: %s)", w, strings.Join(Optional(), ", "))
		}
	}
	goBin, err := findGo()
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{d.BinDir(), d.SrcDir(), d.GoModCache(), d.GoBuildCache(), d.LogDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	progress = serialized(progress) // two steps report at once
	b := &builder{dirs: d, goBin: goBin, progress: progress, env: goEnv(d)}
	man := loadManifest(d)
	steps := slices.DeleteFunc(buildSteps(), func(s buildStep) bool {
		return s.optional && !slices.ContainsFunc(s.components, func(c string) bool { return slices.Contains(with, c) })
	})
	start := time.Now()
	var todo []int // the steps to build, by index
	for i := range steps {
		if !man.verified(steps[i]) {
			todo = append(todo, i)
		}
	}
	if len(todo) > 0 {
		// One build at a time on a cache (two would write the same binaries and manifest): another may be
		// building now (`make test` builds flanneld in the background while the tests' labs start, and a lab
		// that needs it waits here); what it built is not built again.
		lock, err := host.Lock(filepath.Join(d.Dir, "build.lock"), "lab build lock", progress)
		if err != nil {
			return nil, err
		}
		defer lock.Close()
		man = loadManifest(d)
		todo = slices.DeleteFunc(todo, func(i int) bool { return man.verified(steps[i]) })
	}
	for i, s := range steps {
		if !slices.Contains(todo, i) {
			progress("[%d/%d] %s: up to date", i+1, len(steps), s.title)
		}
	}
	// Two steps at a time, in order (Kubernetes, the longest, first): one Go build does not keep two cores
	// busy all through (module downloads, `go mod tidy`, each binary's link are mostly one thread or the
	// network), and the steps share nothing but Go's caches, which are safe to share (cold on 2 cores,
	// 2026-11-30: 438 s one after another).
	var mu sync.Mutex // man and its file
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(buildLanes)
	for _, i := range todo {
		s := steps[i]
		g.Go(func() error {
			progress("[%d/%d] %s: building (log: %s)", i+1, len(steps), s.title, b.logPath(s))
			t0 := time.Now()
			stopBeat := heartbeat(progress, fmt.Sprintf("[%d/%d] %s", i+1, len(steps), s.title), t0)
			err := s.build(gctx, b)
			stopBeat()
			if err != nil {
				return fmt.Errorf("building %s: %w", s.title, err)
			}
			built := map[string]BuiltBinary{}
			for _, c := range s.components {
				bb, err := verifyBinary(gctx, b.binPath(c, s.version), s)
				if err != nil {
					return err
				}
				built[c] = bb
			}
			mu.Lock()
			maps.Copy(man.Components, built)
			err = saveManifest(d, man)
			mu.Unlock()
			if err != nil {
				return err
			}
			progress("[%d/%d] %s: built and verified in %s", i+1, len(steps), s.title, time.Since(t0).Round(time.Second))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	progress("lab build: done in %s (cache %s)", time.Since(start).Round(time.Second), d.Dir)
	return man, nil
}

// buildLanes is how many build steps run at once.
const buildLanes = 2

// Optional are the components Build builds only when asked.
func Optional() []string {
	var out []string
	for _, s := range buildSteps() {
		if s.optional {
			out = append(out, s.components...)
		}
	}
	return out
}

func buildSteps() []buildStep {
	return []buildStep{
		{title: "kubernetes v" + KubernetesVersion + " (" + strings.Join(kubernetesCommands, ", ") + ")",
			components: kubernetesCommands, version: KubernetesVersion, build: buildKubernetes,
			versionArg: "--version", versionWant: "v" + KubernetesVersion},
		{title: "etcd v" + EtcdVersion, components: []string{Etcd}, version: EtcdVersion, build: buildEtcd,
			versionArg: "--version", versionWant: EtcdVersion},
		{title: "kwok v" + KwokVersion, components: []string{Kwok}, version: KwokVersion,
			build: goInstall("sigs.k8s.io/kwok/cmd/kwok", KwokVersion, Kwok), versionArg: "--version", versionWant: KwokVersion},
		{title: "coredns v" + CoreDNSVersion, components: []string{CoreDNS}, version: CoreDNSVersion,
			build: buildCoreDNS, versionArg: "-version", versionWant: CoreDNSVersion},
		flannelStep(),
		traefikStep(),
	}
}

// goEnv is the environment for the Go tool: static binaries, caches under the lab cache, no toolchain switch,
// no DWARF (goFlags), and the compiler's garbage collector at compileGOGC unless GOGC is set.
func goEnv(d Cache) []string {
	env, gogc := []string{}, false
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS", "GOMODCACHE", "GOCACHE", "CGO_ENABLED", "GOTOOLCHAIN", "GOBIN", "GOOS", "GOARCH", "GOWORK":
			continue
		case "GOGC":
			gogc = true
		}
		env = append(env, kv)
	}
	if !gogc {
		env = append(env, "GOGC="+compileGOGC)
	}
	return append(env,
		"GOMODCACHE="+d.GoModCache(), "GOCACHE="+d.GoBuildCache(), "CGO_ENABLED=0",
		"GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS="+goFlags)
}

// goFlags are the lab build's GOFLAGS. Every component links with -s -w (no symbol table, no DWARF: Kubernetes'
// release builds do the same), so the compiler's DWARF would be thrown away at the link: -dwarf=false does not
// write it. Kubernetes' five commands, alone on 2 cores with an empty build cache (2026-11-30, GOGC=400): 274 s
// and 525 CPU-seconds with it written, 244 s and 474 without, the largest process 2.1 and 1.6 GB; the binaries
// run the same code (their build IDs differ: the compile flags are part of them).
const goFlags = "-trimpath -buildvcs=false -modcacherw -gcflags=all=-dwarf=false"

// compileGOGC is the GOGC the lab's build gives the Go tool and through it the compiler and linker, which
// allocate much and live briefly: a heap let grow to 5x its live size before each collection (against 2x)
// spends a fifth less CPU on a cold build. Kubernetes' five commands in one go build, alone on 2 cores with an
// empty build cache (2026-11-30): 328 s and 633 CPU-seconds at Go's default GOGC=100, 266 s and 507 at 400, the
// largest process 2.0 and 2.1 GB, the binaries the same byte for byte; etcd 43 s and 38 s. A user's GOGC is kept.
const compileGOGC = "400"

func findGo() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
		return "/usr/local/go/bin/go", nil
	}
	return "", errors.New("the Go toolchain is needed to build the lab: install Go 1.26 (e.g. /usr/local/go) and put it on PATH")
}

func (b *builder) binPath(component, version string) string {
	return filepath.Join(b.dirs.BinDir(), component+"-v"+version, component)
}

func (b *builder) logPath(s buildStep) string {
	return filepath.Join(b.dirs.LogDir(), strings.Fields(s.title)[0]+".log")
}

// goCmd runs the Go tool in dir with output appended to the step's log; errors carry the log's tail.
func (b *builder) goCmd(ctx context.Context, logName, dir string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 45*time.Minute)
	defer cancel()
	logPath := filepath.Join(b.dirs.LogDir(), logName+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n$ go %s   (in %s, %s)\n", strings.Join(args, " "), dir, time.Now().UTC().Format(time.RFC3339))
	cmd := exec.CommandContext(ctx, b.goBin, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, b.env, logf, logf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", args[0], err, host.Tail(logPath, 20))
	}
	return nil
}

// buildKubernetes makes a scratch module that requires k8s.io/kubernetes with a replace line for every staging
// module (the usual way to import k8s.io/kubernetes), then builds all commands in one go build.
func buildKubernetes(ctx context.Context, b *builder) error {
	dir := filepath.Join(b.dirs.SrcDir(), "k8s-v"+KubernetesVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	const logName = "kubernetes"
	// The upstream go.mod lists the staging modules as "replace k8s.io/x => ./staging/src/k8s.io/x".
	out, err := b.goOutput(ctx, dir, "mod", "download", "-json", "k8s.io/kubernetes@v"+KubernetesVersion)
	if err != nil {
		return err
	}
	var dl struct{ GoMod string }
	if err := json.Unmarshal(out, &dl); err != nil || dl.GoMod == "" {
		return fmt.Errorf("go mod download k8s.io/kubernetes: unexpected output: %s", firstLine(out))
	}
	upstream, err := os.ReadFile(dl.GoMod)
	if err != nil {
		return err
	}
	gomod, err := kubernetesScratchGoMod(upstream, KubernetesVersion)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o644); err != nil {
		return err
	}
	var tools strings.Builder
	tools.WriteString("//go:build tools\n\npackage tools\n\nimport (\n")
	for _, c := range kubernetesCommands {
		fmt.Fprintf(&tools, "\t_ %q\n", "k8s.io/kubernetes/cmd/"+c)
	}
	tools.WriteString(")\n")
	if err := os.WriteFile(filepath.Join(dir, "tools.go"), []byte(tools.String()), 0o644); err != nil {
		return err
	}
	if err := b.goCmd(ctx, logName, dir, "mod", "tidy"); err != nil {
		return err
	}
	minor := strings.Split(KubernetesVersion, ".")[1]
	ld := []string{"-s", "-w"}
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ld = append(ld, "-X", p+".gitVersion=v"+KubernetesVersion, "-X", p+".gitMajor=1", "-X", p+".gitMinor="+minor,
			"-X", p+".gitTreeState=clean", "-X", p+".buildDate=1970-01-01T00:00:00Z")
	}
	// One go build for all the commands: their packages compile once, and one command links while the
	// others compile. It writes each into outDir under its own name; each then moves to its place.
	outDir, err := os.MkdirTemp(dir, "bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(outDir)
	args := []string{"build", "-ldflags", strings.Join(ld, " "), "-o", outDir + string(filepath.Separator)}
	for _, c := range kubernetesCommands {
		args = append(args, "k8s.io/kubernetes/cmd/"+c)
	}
	b.progress("    go build k8s.io/kubernetes/cmd/{%s}", strings.Join(kubernetesCommands, ","))
	if err := b.goCmd(ctx, logName, dir, args...); err != nil {
		return err
	}
	for _, c := range kubernetesCommands {
		out := b.binPath(c, KubernetesVersion)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(outDir, c), out); err != nil {
			return err
		}
	}
	return nil
}

// kubernetesScratchGoMod turns k8s.io/kubernetes's go.mod into the go.mod of a module that requires it.
func kubernetesScratchGoMod(upstream []byte, version string) ([]byte, error) {
	f, err := modfile.Parse("go.mod", upstream, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing k8s.io/kubernetes go.mod: %w", err)
	}
	staging := "v0." + strings.TrimPrefix(version, "1.")
	out := &modfile.File{}
	if err := out.AddModuleStmt("kubeslow.lab/k8s"); err != nil {
		return nil, err
	}
	if err := out.AddGoStmt("1.26.0"); err != nil {
		return nil, err
	}
	if err := out.AddRequire("k8s.io/kubernetes", "v"+version); err != nil {
		return nil, err
	}
	n := 0
	for _, r := range f.Replace {
		if strings.HasPrefix(r.New.Path, "./staging/") {
			if err := out.AddReplace(r.Old.Path, "", r.Old.Path, staging); err != nil {
				return nil, err
			}
			n++
		}
	}
	if n == 0 {
		return nil, errors.New("k8s.io/kubernetes go.mod has no ./staging replace lines: unexpected layout")
	}
	return out.Format()
}

func buildEtcd(ctx context.Context, b *builder) error {
	dir := filepath.Join(b.dirs.SrcDir(), "etcd-v"+EtcdVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gomod := fmt.Sprintf("module kubeslow.lab/etcd\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 v%s\n", EtcdVersion)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	tools := "//go:build tools\n\npackage tools\n\nimport _ \"go.etcd.io/etcd/server/v3\"\n"
	if err := os.WriteFile(filepath.Join(dir, "tools.go"), []byte(tools), 0o644); err != nil {
		return err
	}
	if err := b.goCmd(ctx, "etcd", dir, "mod", "tidy"); err != nil {
		return err
	}
	return b.goCmd(ctx, "etcd", dir, "build", "-ldflags", "-s -w", "-o", b.binPath(Etcd, EtcdVersion), "go.etcd.io/etcd/server/v3")
}

// CoreDNSPlugins are the CoreDNS plugins the lab's CoreDNS is built with, by Corefile directive and package (under
// github.com/coredns/coredns/plugin/): those the lab's Corefiles use (TestCorefilePlugins holds them to this list)
// and the rest of kubeadm's default Corefile (log, loop, reload, loadbalance), so that a stock Corefile runs too.
// The upstream build links all ~60 plugins (the clouds' DNS services, tracing, etcd, …): ~3 min of a cold build's
// compiling on 2 cores, against ~1 for these.
var CoreDNSPlugins = map[string]string{
	"bind": "bind", "cache": "cache", "errors": "errors", "forward": "forward", "health": "health",
	"kubernetes": "kubernetes", "loadbalance": "loadbalance", "log": "log", "loop": "loop",
	"prometheus": "metrics", "ready": "ready", "reload": "reload",
}

// buildCoreDNS builds CoreDNS as CoreDNS documents for a custom set of plugins: a main that imports coremain
// and the plugins' packages (the upstream main imports core/plugin, which imports all of them). The plugins'
// order stays upstream's (dnsserver.Directives).
func buildCoreDNS(ctx context.Context, b *builder) error {
	dir := filepath.Join(b.dirs.SrcDir(), "coredns-v"+CoreDNSVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gomod := fmt.Sprintf("module kubeslow.lab/coredns\n\ngo 1.26.0\n\nrequire github.com/coredns/coredns v%s\n", CoreDNSVersion)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), corednsMain(), 0o644); err != nil {
		return err
	}
	if err := b.goCmd(ctx, CoreDNS, dir, "mod", "tidy"); err != nil {
		return err
	}
	return b.goCmd(ctx, CoreDNS, dir, "build", "-ldflags", "-s -w", "-o", b.binPath(CoreDNS, CoreDNSVersion), ".")
}

// corednsMain is the main package of the lab's CoreDNS: CoreDNSPlugins' packages and coremain.
func corednsMain() []byte {
	pkgs := make([]string, 0, len(CoreDNSPlugins))
	for _, p := range CoreDNSPlugins {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var m strings.Builder
	m.WriteString("// Code generated by kubeslow lab build. DO NOT EDIT.\n\n// The lab's CoreDNS: coremain with the plugins the lab uses.\npackage main\n\nimport (\n")
	for _, p := range pkgs {
		fmt.Fprintf(&m, "\t_ \"github.com/coredns/coredns/plugin/%s\"\n", p)
	}
	m.WriteString("\n\t\"github.com/coredns/coredns/coremain\"\n)\n\nfunc main() { coremain.Run() }\n")
	return []byte(m.String())
}

// goInstall builds pkg@version with `go install`, which needs no scratch module.
func goInstall(pkg, version, component string) func(context.Context, *builder) error {
	return func(ctx context.Context, b *builder) error {
		out := b.binPath(component, version)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		ib := *b // its own environment: GOBIN (steps build side by side on one builder)
		ib.env = append(slices.Clip(b.env), "GOBIN="+filepath.Dir(out))
		return ib.goCmd(ctx, component, b.dirs.SrcDir(), "install", "-ldflags", "-s -w", pkg+"@v"+version)
	}
}

func (b *builder) goOutput(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.goBin, args...)
	cmd.Dir, cmd.Env = dir, b.env
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, err
	}
	return out, nil
}

// verifyBinary runs the binary's version flag and hashes it.
func verifyBinary(ctx context.Context, path string, s buildStep) (BuiltBinary, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, s.versionArg).CombinedOutput()
	if err != nil {
		return BuiltBinary{}, fmt.Errorf("verifying %s: %s %s: %w: %s", s.title, path, s.versionArg, err, firstLine(out))
	}
	if !strings.Contains(string(out), s.versionWant) {
		return BuiltBinary{}, fmt.Errorf("verifying %s: %s reports %q, want %s", s.title, path, firstLine(out), s.versionWant)
	}
	sum, size, err := hashFile(path)
	if err != nil {
		return BuiltBinary{}, err
	}
	return BuiltBinary{Version: s.version, Path: path, SHA256: sum, Size: size, VersionOutput: firstLine(out)}, nil
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func manifestPath(d Cache) string { return filepath.Join(d.BinDir(), "manifest.json") }

func loadManifest(d Cache) *Manifest {
	m := &Manifest{Components: map[string]BuiltBinary{}}
	if b, err := os.ReadFile(manifestPath(d)); err == nil {
		_ = json.Unmarshal(b, m) // a damaged manifest only means a rebuild
		if m.Components == nil {
			m.Components = map[string]BuiltBinary{}
		}
	}
	return m
}

func saveManifest(d Cache, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return host.WriteFileAtomic(manifestPath(d), b, 0o644)
}

// verified reports whether every component of s is recorded at s's version and its file still has the
// recorded hash.
func (m *Manifest) verified(s buildStep) bool {
	for _, c := range s.components {
		bb, ok := m.Components[c]
		if !ok || bb.Version != s.version {
			return false
		}
		sum, _, err := hashFile(bb.Path)
		if err != nil || sum != bb.SHA256 {
			return false
		}
	}
	return true
}

// Binary returns the path of a built component, or an error telling the user to run `lab build`.
func (m *Manifest) Binary(component string) (string, error) {
	bb, ok := m.Components[component]
	if !ok {
		return "", fmt.Errorf("%s is not built: run `kubeslow lab build`", component)
	}
	return bb.Path, nil
}

// Names lists the built components in order.
func (m *Manifest) Names() []string {
	var out []string
	for k := range m.Components {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// WriteTable writes one line per component, by name: its version, path and the start of its SHA-256.
func (m *Manifest) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, n := range m.Names() {
		c := m.Components[n]
		fmt.Fprintf(tw, "%s\tv%s\t%s\t%s\n", n, c.Version, c.Path, c.SHA256[:min(12, len(c.SHA256))])
	}
	return tw.Flush()
}

func heartbeat(progress Progress, what string, t0 time.Time) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				progress("%s: still building, %s elapsed", what, time.Since(t0).Round(time.Second))
			}
		}
	}()
	return func() { close(done) }
}

// serialized is progress called by one goroutine at a time.
func serialized(progress Progress) Progress {
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		progress(format, args...)
	}
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Planned are the binaries' paths: the built ones from the manifest, the others where Build puts them.
func Planned(d Cache) map[string]string {
	man := loadManifest(d)
	bins := map[string]string{}
	for _, s := range buildSteps() {
		for _, comp := range s.components {
			bins[comp] = filepath.Join(d.BinDir(), comp+"-v"+s.version, comp)
			if p, err := man.Binary(comp); err == nil {
				bins[comp] = p
			}
		}
	}
	return bins
}

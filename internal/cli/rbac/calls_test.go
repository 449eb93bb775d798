package rbac

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
)

// This file reads kubeslow's own source to find the API calls each measurement makes, so that
// TestNeedsCoverCalls can hold `kubeslow rbac` (derived from the Specs) to them.

const module = "github.com/kubeslow/kubeslow"

// groupVersions are client-go's typed clients' accessors, by API group.
var groupVersions = map[string]string{"CoreV1": "", "AppsV1": "apps", "BatchV1": "batch", "DiscoveryV1": "discovery.k8s.io",
	"CoordinationV1": "coordination.k8s.io", "AutoscalingV1": "autoscaling", "AutoscalingV2": "autoscaling", "PolicyV1": "policy",
	"NetworkingV1": "networking.k8s.io", "RbacV1": "rbac.authorization.k8s.io", "StorageV1": "storage.k8s.io"}

// call is one API request kubeslow's source makes: a verb on a resource (with its group) or a URL.
type call struct{ verb, group, resource, url string }

func (c call) String() string {
	if c.url != "" {
		return c.verb + " " + c.url
	}
	if c.group != "" {
		return c.verb + " " + c.resource + "." + c.group
	}
	return c.verb + " " + c.resource
}

// source is the module's non-test functions by key (pkgpath.Name or pkgpath.Type.Name) with what each calls.
type source struct {
	funcs   map[string]*fn
	methods map[string][]string // pkgpath + "." + method name -> keys of the package's methods of that name
}

type fn struct {
	calls []call
	next  []string // keys of the module's functions it may call
}

func recvName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// readSource parses every non-test file of internal/.
func readSource(t *testing.T) *source {
	src := &source{funcs: map[string]*fn{}, methods: map[string][]string{}}
	root := filepath.Join("..", "..", "..")
	type pending struct {
		pkg     string
		imports map[string]string
		fd      *ast.FuncDecl
	}
	var todo []pending
	// A package's name is not always its path's last element (internal/source/agent/proto is agentproto):
	// the names of the module's packages are read from their files, and imports resolved after the walk.
	names := map[string]string{}
	var files []struct {
		pkg  string
		file *ast.File
	}
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := module + "/" + filepath.ToSlash(rel)
		names[pkg] = f.Name.Name
		files = append(files, struct {
			pkg  string
			file *ast.File
		}{pkg, f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, pf := range files {
		imports := map[string]string{}
		for _, im := range pf.file.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name, ok := names[p]
			if !ok {
				name = p[strings.LastIndex(p, "/")+1:]
			}
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = p
		}
		for _, decl := range pf.file.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				todo = append(todo, pending{pf.pkg, imports, fd})
			}
		}
	}
	key := func(pkg, recv, name string) string {
		if recv == "" {
			return pkg + "." + name
		}
		return pkg + "." + recv + "." + name
	}
	for _, p := range todo {
		if r := recvName(p.fd); r != "" {
			src.methods[p.pkg+"."+p.fd.Name.Name] = append(src.methods[p.pkg+"."+p.fd.Name.Name], key(p.pkg, r, p.fd.Name.Name))
		}
	}
	for _, p := range todo {
		f := &fn{}
		src.funcs[key(p.pkg, recvName(p.fd), p.fd.Name.Name)] = f
		bound := map[string]call{} // identifiers bound to a resource client: pods := c.CoreV1().Pods(ns)
		ast.Inspect(p.fd.Body, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && len(as.Rhs) == 1 {
				if id, ok := as.Lhs[0].(*ast.Ident); ok {
					if r, ok := resourceOf(as.Rhs[0], bound); ok {
						bound[id.Name] = r
					}
				}
			}
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok {
				if id, ok := c.Fun.(*ast.Ident); ok {
					f.next = append(f.next, p.pkg+"."+id.Name)
				}
				return true
			}
			if r, ok := resourceOf(sel.X, bound); ok {
				switch v := sel.Sel.Name; v {
				case "Get", "List", "Watch", "Create", "Update", "Patch", "Delete", "DeleteCollection":
					r.verb = strings.ToLower(v)
					f.calls = append(f.calls, r)
				case "GetLogs":
					f.calls = append(f.calls, call{verb: "get", resource: r.resource + "/log", group: r.group})
				case "ProxyGet":
					f.calls = append(f.calls, call{verb: "get", resource: r.resource + "/proxy", group: r.group})
				}
			}
			if sel.Sel.Name == "AbsPath" || sel.Sel.Name == "SubResource" {
				if r, ok := restCall(c); ok {
					f.calls = append(f.calls, r)
				}
			}
			if x, ok := sel.X.(*ast.Ident); ok {
				if ip, ok := p.imports[x.Name]; ok {
					if strings.HasPrefix(ip, module+"/") {
						f.next = append(f.next, ip+"."+sel.Sel.Name)
					}
					return true
				}
			}
			// A method call: any method of that name of the package's own types, or of the measurement
			// environment (measure.Env's helpers).
			f.next = append(f.next, src.methods[p.pkg+"."+sel.Sel.Name]...)
			f.next = append(f.next, src.methods[module+"/internal/measure."+sel.Sel.Name]...)
			return true
		})
	}
	return src
}

// resourceOf reads a typed client's resource from x: c.CoreV1().Pods(ns), or an identifier bound to one.
func resourceOf(x ast.Expr, bound map[string]call) (call, bool) {
	if id, ok := x.(*ast.Ident); ok {
		r, ok := bound[id.Name]
		return r, ok
	}
	c, ok := x.(*ast.CallExpr)
	if !ok {
		return call{}, false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return call{}, false
	}
	gc, ok := sel.X.(*ast.CallExpr)
	if !ok {
		return call{}, false
	}
	gsel, ok := gc.Fun.(*ast.SelectorExpr)
	if !ok {
		return call{}, false
	}
	group, ok := groupVersions[gsel.Sel.Name]
	if !ok || sel.Sel.Name == "RESTClient" {
		return call{}, false
	}
	return call{group: group, resource: strings.ToLower(sel.Sel.Name)}, true
}

// restCall reads a RESTClient request: its method (Get, Post) and its literal path (AbsPath("/metrics"),
// AbsPath("/api/v1/nodes", node, "proxy", ...), Resource("pods")...SubResource("exec")). A path that is not a
// literal is not read (cpapi's optional reads, asked only where allowed).
func restCall(c *ast.CallExpr) (call, bool) {
	var lits []string
	method := ""
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		ce, ok := e.(*ast.CallExpr)
		if !ok {
			return
		}
		sel, ok := ce.Fun.(*ast.SelectorExpr)
		if !ok {
			return
		}
		switch sel.Sel.Name {
		case "Get", "Post", "Put", "Delete", "Patch":
			if len(ce.Args) == 0 && method == "" {
				method = map[string]string{"Get": "get", "Post": "create", "Put": "update", "Delete": "delete", "Patch": "patch"}[sel.Sel.Name]
			}
		case "AbsPath", "Resource", "SubResource":
			for _, a := range ce.Args {
				if bl, ok := a.(*ast.BasicLit); ok && bl.Kind == token.STRING {
					s, _ := strconv.Unquote(bl.Value)
					lits = append(lits, sel.Sel.Name+"="+s)
				}
			}
		}
		walk(sel.X)
	}
	walk(c)
	has := func(s string) bool {
		for _, l := range lits {
			if strings.HasSuffix(l, "="+s) {
				return true
			}
		}
		return false
	}
	switch {
	case method == "" || len(lits) == 0:
		return call{}, false
	case has("/api/v1/nodes") && has("proxy"):
		return call{verb: method, resource: "nodes/proxy"}, true
	case has("/api/v1/namespaces") && has("pods") && has("proxy"):
		return call{verb: method, resource: "pods/proxy"}, true
	case has("pods") && has("exec"):
		return call{verb: method, resource: "pods/exec"}, true
	}
	for _, l := range lits {
		if p, ok := strings.CutPrefix(l, "AbsPath="); ok && strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "/api") {
			return call{verb: method, url: p}, true
		}
	}
	return call{}, false
}

// reach is every API call reachable from roots, not entering the packages in stop.
func (s *source) reach(roots []string, stop func(key string) bool) map[call][]string {
	out := map[call][]string{}
	seen := map[string]bool{}
	var visit func(k string)
	visit = func(k string) {
		f := s.funcs[k]
		if seen[k] || f == nil || stop(k) {
			return
		}
		seen[k] = true
		for _, c := range f.calls {
			out[c] = append(out[c], k)
		}
		for _, n := range f.next {
			visit(n)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	return out
}

func granted(c call, ps []measure.Permission) bool {
	for _, p := range ps {
		if c.url != "" && p.NonResourceURL != c.url || c.url == "" && (p.Resource != c.resource || p.Group != c.group) {
			continue
		}
		for _, v := range p.Verbs {
			if v == c.verb {
				return true
			}
		}
	}
	return false
}

// TestNeedsCoverCalls: every API call a measurement's code can reach (through its own package and kubeslow's
// helpers: measure.Env, kube, agentproto, workload; the node tier's own code is held to cpnode.Permissions) is
// granted by its Spec, which `kubeslow rbac` grants (NeedsOf), so a new call without its permission fails here
// instead of on a user's cluster. Calls through an interface are not followed.
func TestNeedsCoverCalls(t *testing.T) {
	src := readSource(t)
	cp := module + "/internal/measure/cpnode."
	inCPNode := func(k string) bool { return strings.HasPrefix(k, cp) }
	ro, bench := Needs()
	for _, spec := range catalogue.Specs() {
		typ := reflect.TypeOf(spec.New(measure.Options{}))
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		prefix := typ.PkgPath() + "." + typ.Name() + "."
		var roots []string
		for k := range src.funcs {
			if strings.HasPrefix(k, prefix) {
				roots = append(roots, k)
			}
		}
		if len(roots) == 0 {
			t.Fatalf("%s: no methods of %s found in the source", spec.Name, prefix)
		}
		calls := src.reach(roots, inCPNode)
		var missing []string
		for c, by := range calls {
			if !granted(c, spec.Permissions) {
				sort.Strings(by)
				missing = append(missing, c.String()+" (in "+by[0]+")")
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s calls what its Spec does not grant:\n  %s", spec.Name, strings.Join(missing, "\n  "))
		}
		t.Logf("%s: %d API calls reached, all granted", spec.Name, len(calls))
		// And kubeslow rbac grants the Spec's permissions in the role its kind goes to.
		needs := ro
		if spec.Kind == measure.Benchmark {
			needs = bench
		}
		for _, p := range spec.Permissions {
			found := false
			for _, n := range needs {
				found = found || (n.By == spec.Name && reflect.DeepEqual(n.Permission, p))
			}
			if !found {
				t.Errorf("%s: kubeslow rbac does not grant %s", spec.Name, p)
			}
		}
	}
	var roots []string
	for k := range src.funcs {
		if inCPNode(k) {
			roots = append(roots, k)
		}
	}
	for c, by := range src.reach(roots, func(string) bool { return false }) {
		if !granted(c, cpnode.Permissions()) && !granted(c, cpnode.MetricsAccessPermissions()) {
			t.Errorf("the node tier calls %s (in %s), which cpnode.Permissions does not grant", c, by[0])
		}
	}
}

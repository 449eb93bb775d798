package build

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FlannelVersion is flannel's pinned version (`lab up --cni flannel`).
const FlannelVersion = "0.28.10"

// Flannel is flanneld's component name.
const Flannel = "flanneld"

// flannelModule is flannel's module path; its main package is the module's root.
const flannelModule = "github.com/flannel-io/flannel"

// flannelDroppedBackends are flannel's backends the lab's build leaves out of flanneld: tencentvpc imports
// github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc, whose zip the Go module proxy does not serve
// (403), so `go install github.com/flannel-io/flannel@v0.28.10` fails; udp's packet proxy is C (cgo), and the lab
// builds static binaries with CGO_ENABLED=0. The lab runs the vxlan backend; the others stay in.
var flannelDroppedBackends = []string{flannelModule + "/pkg/backend/tencentvpc", flannelModule + "/pkg/backend/udp"}

// flannelStep builds flanneld: a scratch module that requires flannel and holds a copy of its main.go without
// the dropped backends' imports (the rest of flannel is built from the module proxy unchanged), with flannel's
// version stamped as its Makefile does.
func flannelStep() buildStep {
	return buildStep{title: "flannel v" + FlannelVersion, components: []string{Flannel}, version: FlannelVersion, build: buildFlannel,
		versionArg: "--version", versionWant: "v" + FlannelVersion, optional: true}
}

func buildFlannel(ctx context.Context, b *builder) error {
	dir := filepath.Join(b.dirs.SrcDir(), "flannel-v"+FlannelVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out, err := b.goOutput(ctx, dir, "mod", "download", "-json", flannelModule+"@v"+FlannelVersion)
	if err != nil {
		return err
	}
	var dl struct{ Dir string }
	if err := json.Unmarshal(out, &dl); err != nil || dl.Dir == "" {
		return fmt.Errorf("go mod download %s: unexpected output: %s", flannelModule, firstLine(out))
	}
	src, err := os.ReadFile(filepath.Join(dl.Dir, "main.go"))
	if err != nil {
		return err
	}
	main, err := FlannelMain(src)
	if err != nil {
		return err
	}
	gomod := fmt.Sprintf("module kubeslow.lab/flannel\n\ngo 1.26.0\n\nrequire %s v%s\n", flannelModule, FlannelVersion)
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := b.goCmd(ctx, "flannel", dir, "mod", "tidy"); err != nil {
		return err
	}
	return b.goCmd(ctx, "flannel", dir, "build", "-ldflags", "-s -w -X "+flannelModule+"/pkg/version.Version=v"+FlannelVersion,
		"-o", b.binPath(Flannel, FlannelVersion), ".")
}

// FlannelMain is flannel's main.go without the imports of flannelDroppedBackends; it fails if one of them is not
// found, so that a changed upstream layout is noticed rather than built around (pure).
func FlannelMain(src []byte) ([]byte, error) {
	lines := strings.Split(string(src), "\n")
	for _, pkg := range flannelDroppedBackends {
		found := false
		for i, l := range lines {
			if strings.TrimSpace(l) == "_ \""+pkg+"\"" {
				lines = append(lines[:i], lines[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("flannel's main.go does not import %s as expected: upstream changed", pkg)
		}
	}
	return []byte(strings.Join(lines, "\n")), nil
}

package image

import (
	"bytes"
	"context"
	"debug/elf"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent/image/agentimagetest"
)

func push(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(common.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"push"}, args...))
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// `kubeslow image push` prints only the reference by digest on stdout, which names what the registry holds.
func TestPushPrintsTheDigestReference(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: anonymous
	ref := strings.TrimPrefix(srv.URL, "http://") + "/kubeslow:dev"
	out, errOut, err := push(t, ref, "--insecure", "--binary", agentimagetest.WriteELF(t, elf.EM_X86_64, false))
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	dg, err := name.NewDigest(strings.TrimSuffix(out, "\n"), name.Insecure)
	if err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout %q: %v", out, err)
	}
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	head, err := remote.Head(tag)
	if err != nil || head.Digest.String() != dg.DigestStr() {
		t.Fatalf("%s is %v (%v), printed %s", ref, head, err, dg)
	}

	out, _, err = push(t, ref, "--insecure", "--binary", agentimagetest.WriteELF(t, elf.EM_X86_64, true))
	if err == nil || !strings.Contains(err.Error(), "dynamically linked") || out != "" {
		t.Fatalf("a dynamic binary: %v, stdout %q", err, out)
	}
}

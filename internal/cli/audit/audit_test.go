package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func run(t *testing.T, args ...string) (*result.Report, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(common.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"-o", "json"}, args...))
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	code := 0
	if err := cmd.Execute(); err != nil {
		var ee *common.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("error without an exit code: %v", err)
		}
		code = ee.Code
	}
	if out.Len() == 0 {
		return nil, code
	}
	rep, err := result.Decode(&out)
	if err != nil {
		t.Fatalf("output is not a report: %v", err)
	}
	return rep, code
}

func write(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func line(verb, user, agent, resource string, code, sec int) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":%q,"user":{"username":%q},`+
		`"userAgent":%q,"objectRef":{"resource":%q,"namespace":"default","name":"x"},"responseStatus":{"code":%d},`+
		`"requestReceivedTimestamp":"2026-11-22T10:00:%02d.000000Z","stageTimestamp":"2026-11-22T10:00:%02d.010000Z"}`+"\n", verb, user, agent, resource, code, sec, sec)
}

// TestExitCodes: audit follows run's exit codes — 1 with findings (the lab's recorded conflict storm), 0
// without, 2 when it could not measure: an input of only unreadable lines is an Error, not a Pass, and an
// empty one measured nothing.
func TestExitCodes(t *testing.T) {
	rep, code := run(t, filepath.Join("..", "..", "source", "auditlog", "testdata", "lab-conflict-storm.log.gz"))
	if code != 1 || rep == nil || len(rep.Findings) == 0 || rep.Findings[0].ID != "KS-AUDIT-409" {
		t.Fatalf("conflict storm: exit %d, report %+v", code, rep)
	}
	if _, code := run(t, "--fail-on", "critical", filepath.Join("..", "..", "source", "auditlog", "testdata", "lab-conflict-storm.log.gz")); code != 0 {
		t.Errorf("a warning below --fail-on critical: exit %d", code)
	}

	var quiet strings.Builder
	for i := range 30 {
		quiet.WriteString(line("get", "alice", "kubectl/v1.31.0", "pods", 200, i))
	}
	rep, code = run(t, write(t, quiet.String()))
	if code != 0 || rep == nil || rep.Results[0].Status != result.StatusPass || len(rep.Findings) != 0 {
		t.Fatalf("quiet log: exit %d, report %+v", code, rep)
	}

	rep, code = run(t, write(t, "not json\n{\"verb\":\ntruncated"))
	if code != 2 || rep == nil || rep.Results[0].Status != result.StatusError || !strings.Contains(rep.Results[0].Reason, "all 3 lines unreadable") {
		t.Fatalf("unreadable log: exit %d, report %+v", code, rep)
	}
	for _, e := range rep.Rules {
		if e.Status != result.RuleNotEvaluated {
			t.Errorf("rule %s %s on an unreadable log", e.ID, e.Status)
		}
	}

	rep, code = run(t, write(t, ""))
	if code != 2 || rep == nil || rep.Results[0].Status != result.StatusSkip {
		t.Fatalf("empty log: exit %d, report %+v", code, rep)
	}

	if _, code := run(t, "--fail-on", "loud", write(t, quiet.String())); code != 2 {
		t.Errorf("bad --fail-on: exit %d", code)
	}
}

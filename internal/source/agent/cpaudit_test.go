package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readAll reads the log from cur in chunks of max bytes until EOF, as the client does.
func readAll(t *testing.T, dir string, cur AuditCursor, max int64) (string, AuditCursor, bool) {
	t.Helper()
	var out strings.Builder
	lost := false
	for i := 0; i < 100; i++ {
		var h AuditHeader
		b, err := ReadAuditChunk(&h, dir, "audit.log", cur, max)
		if err != nil {
			t.Fatal(err)
		}
		if h.Bytes != len(b) || h.From.Offset < 0 {
			t.Fatalf("header %+v for %d bytes", h, len(b))
		}
		lost = lost || h.Lost
		out.Write(b)
		cur = h.Next
		if h.EOF {
			return out.String(), cur, lost
		}
	}
	t.Fatal("no EOF after 100 chunks")
	return "", cur, lost
}

func write(t *testing.T, p, s string, appendTo bool) {
	t.Helper()
	fl := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		fl = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(p, fl, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// A read across lumberjack's backups and the active file, in small chunks of whole lines, resumed from a
// cursor after a rotation renamed the file it pointed into: every line once, in order.
func TestReadAuditAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "audit-2024-05-01T10-00-00.000.log"), "a1\na2\n", false)
	write(t, filepath.Join(dir, "audit-2024-05-01T09-00-00.000.log"), "o1\no2\n", false)
	write(t, filepath.Join(dir, "audit-2024-05-01T08-00-00.000.log.gz"), "\x1f\x8b", false)
	write(t, filepath.Join(dir, "unrelated.log"), "x\n", false)
	act := filepath.Join(dir, "audit.log")
	write(t, act, "c1\nc2\npartial", false)

	files, err := ListAuditFiles(dir, "audit.log")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "audit-2024-05-01T08-00-00.000.log.gz,audit-2024-05-01T09-00-00.000.log,audit-2024-05-01T10-00-00.000.log,audit.log" || !files[3].Active || !files[0].Gzip {
		t.Fatalf("files %v", files)
	}
	got, cur, lost := readAll(t, dir, AuditCursor{}, 4)
	if got != "o1\no2\na1\na2\nc1\nc2\n" || lost {
		t.Fatalf("read %q (lost %v)", got, lost)
	}
	// The apiserver finishes its line and writes more; then lumberjack renames audit.log and starts anew.
	write(t, act, "\nc3\n", true)
	if err := os.Rename(act, filepath.Join(dir, "audit-2024-05-01T11-00-00.000.log")); err != nil {
		t.Fatal(err)
	}
	write(t, act, "n1\n", false)
	got, cur2, lost := readAll(t, dir, cur, 8)
	if got != "partial\nc3\nn1\n" || lost {
		t.Fatalf("after rotation read %q (lost %v)", got, lost)
	}
	// Nothing new: an empty chunk at EOF, the same cursor.
	var h AuditHeader
	if b, err := ReadAuditChunk(&h, dir, "audit.log", cur2, 10); err != nil || len(b) != 0 || !h.EOF || h.Next != cur2 {
		t.Fatalf("idle read: %q %+v %v", b, h, err)
	}
	// The cursor's file rotated out (deleted by --audit-log-maxbackup): restart at the oldest, marked lost.
	gone := AuditCursor{File: "audit-1999.log", Inode: 1, Offset: 3}
	if got, _, lost := readAll(t, dir, gone, 1<<20); !lost || !strings.HasPrefix(got, "o1\n") {
		t.Fatalf("lost cursor: %q lost=%v", got, lost)
	}
	// maxBytes 0: the cursor at the end of the active file, no data.
	h = AuditHeader{}
	if b, err := ReadAuditChunk(&h, dir, "audit.log", AuditCursor{}, 0); err != nil || len(b) != 0 || h.Next.File != "audit.log" || h.Next.Offset != 3 || !h.EOF {
		t.Fatalf("end cursor: %+v %v", h, err)
	}
}

func TestReadAuditLongLine(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "audit.log"), strings.Repeat("x", 100)+"\n", false)
	var h AuditHeader
	if _, err := ReadAuditChunk(&h, dir, "audit.log", AuditCursor{}, 10); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("a line longer than the chunk: %v", err)
	}
	// A cursor past the end (the file was truncated or replaced under its name): read again from the start.
	h = AuditHeader{}
	b, err := ReadAuditChunk(&h, dir, "audit.log", AuditCursor{File: "audit.log", Offset: 1000}, 1000)
	if err != nil || len(b) != 101 || h.Reason == "" {
		t.Fatalf("past the end: %d bytes %+v %v", len(b), h, err)
	}
}

func TestAuditLogOf(t *testing.T) {
	cp := &ControlPlane{Components: []Component{{Name: CompEtcd}}}
	if _, _, _, why := AuditLogOf(cp); !strings.Contains(why, "no kube-apiserver") {
		t.Error(why)
	}
	for flags, want := range map[string]string{
		"":                              "no --audit-log-path",
		"audit-log-path=-":              "standard output",
		"audit-log-path=/var/log/a.log": "no --audit-policy-file",
		"audit-log-path=a.log,audit-policy-file=/p":          "relative",
		"audit-log-path=/var/log/a.log,audit-policy-file=/p": "",
	} {
		f := map[string]string{}
		for _, kv := range strings.Split(flags, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		cp := &ControlPlane{Components: []Component{{Name: CompAPIServer, PID: 7, Flags: f}}}
		c, _, _, why := AuditLogOf(cp)
		if c == nil || c.PID != 7 || (want == "" && why != "") || (want != "" && !strings.Contains(why, want)) {
			t.Errorf("%q: %q, want %q", flags, why, want)
		}
	}
	k3s := &ControlPlane{Components: []Component{{Name: CompK3s, Flags: map[string]string{"kube-apiserver:audit-log-path": "/l", "kube-apiserver:audit-policy-file": "/p"}}}}
	if _, p, pol, why := AuditLogOf(k3s); p != "/l" || pol != "/p" || why != "" {
		t.Errorf("k3s: %q %q %q", p, pol, why)
	}
}

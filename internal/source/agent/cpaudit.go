package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
)

// Streaming the apiserver's audit log from its node: the file named by --audit-log-path and the backups
// lumberjack rotated it into (<name>-<timestamp><ext> beside it), read through /proc/<pid>/root so the path
// is the apiserver's own whatever hostPath maps it, in chunks of whole lines, each resumable from a cursor
// that survives a rotation (it names the file by inode).

// AuditCursor is where an audit read resumes: a file (by inode, which a rotation keeps, and by the name it
// had) and an offset in it.
type AuditCursor struct {
	File   string `json:"file,omitempty"`
	Inode  uint64 `json:"inode,omitempty"`
	Offset int64  `json:"offset"`
}

// AuditFile is one file of the audit log: the active one or a rotated backup.
type AuditFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Inode  uint64 `json:"inode"`
	Active bool   `json:"active,omitempty"`
	// Gzip backups (--audit-log-compress) are listed but not streamed.
	Gzip bool `json:"gzip,omitempty"`
}

// AuditHeader is the first line of `agent cp-audit`'s output; the chunk's bytes follow it.
type AuditHeader struct {
	Node string `json:"node,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Path and Policy are the apiserver's --audit-log-path and --audit-policy-file.
	Path   string `json:"path,omitempty"`
	Policy string `json:"policy,omitempty"`
	// Files are the log's files, oldest first, the active one last.
	Files []AuditFile `json:"files,omitempty"`
	// From is where the chunk starts, Next where the next read resumes.
	From AuditCursor `json:"from"`
	Next AuditCursor `json:"next"`
	// Bytes is the chunk's length: whole lines.
	Bytes int `json:"bytes"`
	// EOF: the chunk ends at the end of the active file (nothing more for now).
	EOF bool `json:"eof,omitempty"`
	// Lost: the cursor's file is gone (rotated out by --audit-log-maxbackup or --audit-log-maxage, or the
	// log was replaced), so the read restarted at the oldest file: events in between were not read.
	Lost bool `json:"lost,omitempty"`
	// Reason says why there is no log to read (audit off, logged to stdout) or what was skipped.
	Reason string `json:"reason,omitempty"`
}

// AuditLogOf finds the apiserver among cp's components and its audit log's path and policy file; ok is
// false with a reason when there is none to read.
func AuditLogOf(cp *ControlPlane) (c *Component, logPath, policy, why string) {
	for i := range cp.Components {
		if cp.Components[i].Embeds(CompAPIServer) {
			c = &cp.Components[i]
			break
		}
	}
	if c == nil {
		return nil, "", "", "no kube-apiserver on this node"
	}
	logPath, _ = c.FlagOf(CompAPIServer, "audit-log-path")
	policy, _ = c.FlagOf(CompAPIServer, "audit-policy-file")
	switch {
	case logPath == "":
		return c, "", policy, "kube-apiserver has no --audit-log-path: audit logging to a file is off (set --audit-policy-file and --audit-log-path)"
	case logPath == "-":
		return c, logPath, policy, "kube-apiserver logs audit events to its standard output (--audit-log-path=-): read them from its container log"
	case policy == "":
		return c, logPath, policy, "kube-apiserver has --audit-log-path but no --audit-policy-file: it records no audit events"
	case !path.IsAbs(logPath):
		return c, logPath, policy, fmt.Sprintf("--audit-log-path=%q is relative to the apiserver's working directory", logPath)
	}
	return c, logPath, policy, ""
}

// ListAuditFiles lists the audit log's files in dir (as the agent reaches it): backups of active in
// rotation order, then active itself.
func ListAuditFiles(dir, active string) ([]AuditFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type bk struct {
		stamp string
		f     AuditFile
	}
	var backups []bk
	var cur *AuditFile
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		stamp, gz, isBackup := RotatedOf(active, e.Name())
		if !isBackup && e.Name() != active {
			continue
		}
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // rotated away since the listing
		}
		f := AuditFile{Name: e.Name(), Size: st.Size(), Inode: inodeOf(st), Gzip: gz}
		if isBackup {
			backups = append(backups, bk{stamp, f})
		} else {
			f.Active = true
			cur = &f
		}
	}
	sort.Slice(backups, func(i, j int) bool { return backups[i].stamp < backups[j].stamp })
	out := make([]AuditFile, 0, len(backups)+1)
	for _, b := range backups {
		out = append(out, b.f)
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out, nil
}

func inodeOf(st os.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ino
	}
	return 0
}

// ReadAuditChunk reads from the audit log in dir (active file active) at cur at most maxBytes of whole
// lines, from one file. maxBytes 0 reads nothing and returns the end of the active file as Next: a cursor
// from which only later events are read. A zero cursor starts at the oldest file.
func ReadAuditChunk(h *AuditHeader, dir, active string, cur AuditCursor, maxBytes int64) ([]byte, error) {
	files, err := ListAuditFiles(dir, active)
	if err != nil {
		return nil, err
	}
	h.Files = files
	if len(files) == 0 || !files[len(files)-1].Active {
		h.Reason = fmt.Sprintf("no %s in %s yet", active, dir)
		if len(files) == 0 {
			h.Next, h.EOF = cur, true
			return nil, nil
		}
	}
	if maxBytes == 0 {
		last := files[len(files)-1]
		h.From = AuditCursor{File: last.Name, Inode: last.Inode, Offset: last.Size}
		h.Next, h.EOF = h.From, true
		return nil, nil
	}
	i := -1
	for j, f := range files {
		if (cur.Inode != 0 && f.Inode == cur.Inode) || (cur.Inode == 0 && cur.File != "" && f.Name == cur.File) {
			i = j
		}
	}
	if i < 0 {
		h.Lost = cur != (AuditCursor{})
		i, cur = 0, AuditCursor{}
	}
	for ; i < len(files) && files[i].Gzip; i++ {
		h.Reason = "compressed backups (--audit-log-compress) skipped"
		cur = AuditCursor{}
	}
	if i == len(files) {
		h.Next, h.EOF = cur, true
		return nil, nil
	}
	f := files[i]
	if cur.Offset > f.Size || cur.Offset < 0 {
		h.Reason = fmt.Sprintf("%s is shorter (%d bytes) than the cursor's offset %d: read again from its start", f.Name, f.Size, cur.Offset)
		cur.Offset = 0
	}
	h.From = AuditCursor{File: f.Name, Inode: f.Inode, Offset: cur.Offset}
	fd, err := os.Open(filepath.Join(dir, f.Name))
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	if st, err := fd.Stat(); err == nil && inodeOf(st) != f.Inode {
		return nil, fmt.Errorf("%s was rotated while being read: read again", f.Name)
	}
	buf := make([]byte, maxBytes)
	n, err := fd.ReadAt(buf, cur.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	buf = buf[:n]
	// Whole lines only: the apiserver may be half-way through writing the last one.
	cut := bytes.LastIndexByte(buf, '\n') + 1
	if cut == 0 && int64(n) == maxBytes {
		if hasNewline(fd, cur.Offset+int64(n)) {
			return nil, fmt.Errorf("%s: a line at offset %d is longer than the %d bytes read at once", f.Name, cur.Offset, maxBytes)
		}
		n = 0 // an unterminated last line, being written: as at the end of the file
	}
	buf = buf[:cut]
	h.Bytes = len(buf)
	end := cur.Offset + int64(cut)
	h.Next = AuditCursor{File: f.Name, Inode: f.Inode, Offset: end}
	if int64(n) < maxBytes { // read to the file's end
		switch {
		case f.Active:
			h.EOF = true // a partial last line is read once it is whole
		case i+1 < len(files):
			// A backup does not grow (an unterminated last line is dropped): go on with the next file.
			nx := files[i+1]
			h.Next = AuditCursor{File: nx.Name, Inode: nx.Inode}
		}
	}
	return buf, nil
}

// AuditDir is the directory of the apiserver's audit log as the agent reaches it: through the process's
// root (/proc/<pid>/root), which is its mount namespace's view whatever hostPath holds it.
func AuditDir(proc string, pid int, logPath string) string {
	return filepath.Join(proc, strconv.Itoa(pid), "root", path.Dir(logPath))
}

// hasNewline reports whether f has a newline after off.
func hasNewline(f *os.File, off int64) bool {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.ReadAt(buf, off)
		if bytes.IndexByte(buf[:n], '\n') >= 0 {
			return true
		}
		if err != nil || n == 0 {
			return false
		}
		off += int64(n)
	}
}

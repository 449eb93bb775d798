package auditlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// BadLine records an unreadable line (the first few are kept).
type BadLine struct {
	File string
	Line int
	Err  string
}

// Stats count what a read saw.
type Stats struct {
	Files    int
	Bytes    int64
	Lines    int64
	Events   int64
	BadLines int64
	FirstBad []BadLine
}

const keepBad = 5

// Expand turns paths (files or directories) into the audit files to read, oldest first: a directory's
// files named like the apiserver's rotation (audit.log, audit-2026-11-22T10-00-00.000.log, with .gz), ordered
// by modification time, the live file last.
func Expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		type f struct {
			path string
			mod  int64
		}
		var fs []f
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || !(strings.HasSuffix(n, ".log") || strings.HasSuffix(n, ".log.gz") || strings.HasSuffix(n, ".gz")) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				return nil, err
			}
			fs = append(fs, f{filepath.Join(p, n), info.ModTime().UnixNano()})
		}
		sort.Slice(fs, func(i, j int) bool { return fs[i].mod < fs[j].mod })
		for _, x := range fs {
			out = append(out, x.path)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no audit log files found")
	}
	return out, nil
}

// Read streams every event of the files to fn, in order (the *Event is valid during the call only: fn copies
// what it keeps). Garbage and truncated lines are counted and skipped, never fatal; an unreadable file is an
// error.
func Read(ctx context.Context, files []string, fn func(*Event), progress func(Stats)) (Stats, error) {
	var st Stats
	for _, path := range files {
		if err := readFile(ctx, path, &st, fn, progress); err != nil {
			return st, fmt.Errorf("%s: %w", path, err)
		}
		st.Files++
	}
	return st, nil
}

func readFile(ctx context.Context, path string, st *Stats, fn func(*Event), progress func(Stats)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	counting := &countingReader{r: f, n: &st.Bytes}
	br := bufio.NewReaderSize(counting, 1<<20)
	var r io.Reader = br
	// gzip is recognised by its magic bytes, not by the file name.
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	}
	lr := bufio.NewReaderSize(r, 1<<20)
	lineNo := 0
	p := parser{intern: map[string]string{}}
	var ev Event
	for {
		line, err := readLine(lr)
		if len(line) > 0 {
			lineNo++
			st.Lines++
			if t := bytes.TrimSpace(line); len(t) > 0 {
				if perr := p.parse(t, &ev); perr != nil {
					st.BadLines++
					if len(st.FirstBad) < keepBad {
						st.FirstBad = append(st.FirstBad, BadLine{File: path, Line: lineNo, Err: perr.Error()})
					}
				} else {
					st.Events++
					fn(&ev)
				}
			}
			if progress != nil && st.Lines%500000 == 0 {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				progress(*st)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			// A truncated gzip stream ends the file, with what was read kept.
			if errors.Is(err, io.ErrUnexpectedEOF) {
				st.BadLines++
				if len(st.FirstBad) < keepBad {
					st.FirstBad = append(st.FirstBad, BadLine{File: path, Line: lineNo + 1, Err: "truncated compressed stream"})
				}
				return nil
			}
			return err
		}
	}
}

// readLine returns one line of any length (audit lines can exceed a bufio buffer).
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	buf := append([]byte(nil), line...)
	for err == bufio.ErrBufferFull {
		line, err = r.ReadSlice('\n')
		buf = append(buf, line...)
	}
	return buf, err
}

type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

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
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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

// blockSize is how much of a file one parsing job holds (whole lines; a longer line makes its block grow).
const blockSize = 1 << 20

// block is one job of the parallel read: whole lines in, their events and unreadable lines out.
type block struct {
	data   []byte
	events []Event
	lines  int64
	nbad   int64
	bad    []badAt // the first keepBad unreadable lines, by line number within the block
	done   chan struct{}
}

type badAt struct {
	line int64
	err  string
}

// readFile parses a file's lines on GOMAXPROCS goroutines: one reads (and decompresses) the file in blocks of
// whole lines, workers parse blocks, and this goroutine hands their events to fn in file order, so the
// analysis, line numbers and "first bad lines" are those of a sequential read.
func readFile(ctx context.Context, path string, st *Stats, fn func(*Event), progress func(Stats)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	counting := &countingReader{r: f}
	// Smaller than a block: a block's reads of a plain file then bypass this buffer (no copy through it).
	br := bufio.NewReaderSize(counting, 64<<10)
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
	workers := max(runtime.GOMAXPROCS(0), 1)
	jobs := make(chan *block, workers)
	order := make(chan *block, 2*workers)
	free := make(chan *block, 3*workers+2)
	quit := make(chan struct{})
	var readErr error
	go func() {
		defer close(order)
		defer close(jobs)
		readErr = produce(r, jobs, order, free, quit)
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := parser{intern: map[string]string{}}
			for b := range jobs {
				b.parse(&p)
				close(b.done)
			}
		}()
	}
	defer wg.Wait()
	// Stop the reader and drain what is in flight (on an early return).
	stop := func() {
		close(quit)
		for b := range order {
			<-b.done
		}
	}
	base := st.Bytes
	var lineNo int64
	for b := range order {
		<-b.done
		for i := range b.events {
			st.Events++
			fn(&b.events[i])
		}
		st.BadLines += b.nbad
		for _, x := range b.bad {
			if len(st.FirstBad) < keepBad {
				st.FirstBad = append(st.FirstBad, BadLine{File: path, Line: int(lineNo + x.line), Err: x.err})
			}
		}
		before := st.Lines
		lineNo += b.lines
		st.Lines += b.lines
		st.Bytes = base + counting.n.Load()
		select {
		case free <- b:
		default:
		}
		if err := ctx.Err(); err != nil {
			stop()
			return err
		}
		if progress != nil && st.Lines/500000 != before/500000 {
			progress(*st)
		}
	}
	st.Bytes = base + counting.n.Load()
	if readErr != nil {
		// A truncated gzip stream ends the file, with what was read kept.
		if errors.Is(readErr, io.ErrUnexpectedEOF) {
			st.BadLines++
			if len(st.FirstBad) < keepBad {
				st.FirstBad = append(st.FirstBad, BadLine{File: path, Line: int(lineNo + 1), Err: "truncated compressed stream"})
			}
			return nil
		}
		return readErr
	}
	return nil
}

// produce reads r into blocks of whole lines and queues each both for a worker (jobs) and, in file order,
// for the consumer (order). A read error ends it: what was read is queued first (a last line without its
// newline included), then the error is returned (nil at EOF).
func produce(r io.Reader, jobs, order chan<- *block, free chan *block, quit <-chan struct{}) error {
	var carry []byte
	for {
		var b *block
		select {
		case b = <-free:
		default:
			b = &block{data: make([]byte, 0, blockSize)}
		}
		b.data = append(b.data[:0], carry...)
		carry = carry[:0]
		var err error
		newline := false // the carried partial line has none
		for {
			if len(b.data) == cap(b.data) {
				b.data = append(b.data, 0)[:len(b.data)] // a line longer than the block: grow it
			}
			var n int
			n, err = r.Read(b.data[len(b.data):cap(b.data)])
			b.data = b.data[:len(b.data)+n]
			if err != nil {
				break
			}
			newline = newline || bytes.IndexByte(b.data[len(b.data)-n:], '\n') >= 0
			if len(b.data) == cap(b.data) && newline {
				break
			}
		}
		if err == nil {
			// Keep the partial last line for the next block.
			cut := bytes.LastIndexByte(b.data, '\n') + 1
			carry = append(carry, b.data[cut:]...)
			b.data = b.data[:cut]
		}
		if len(b.data) > 0 {
			b.done = make(chan struct{})
			select {
			case order <- b:
			case <-quit:
				return nil
			}
			select {
			case jobs <- b:
			case <-quit:
				close(b.done)
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// parse parses a block's lines.
func (b *block) parse(p *parser) {
	b.events, b.lines, b.nbad, b.bad = b.events[:0], 0, 0, b.bad[:0]
	data := b.data
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		b.lines++
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		if len(b.events) == cap(b.events) {
			b.events = append(b.events, Event{})[:len(b.events)]
		}
		b.events = b.events[:len(b.events)+1]
		if err := p.parse(t, &b.events[len(b.events)-1]); err != nil {
			b.events = b.events[:len(b.events)-1]
			b.nbad++
			if len(b.bad) < keepBad {
				b.bad = append(b.bad, badAt{line: b.lines, err: err.Error()})
			}
		}
	}
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

package diskprobe

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRunSync(t *testing.T) {
	dir := t.TempDir()
	r, err := RunSync(context.Background(), dir, Recipe{Size: 100 * 2300, BlockSize: 2300})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sync) != 100 || r.Bytes != 100*2300 || r.Elapsed <= 0 {
		t.Fatalf("%d syncs, %d bytes, %v", len(r.Sync), r.Bytes, r.Elapsed)
	}
	s := r.Summary()
	if s.N != 100 || s.P50 <= 0 || s.P50 > s.P99 || s.P99 > s.Max || s.IOPS <= 0 {
		t.Errorf("summary %+v", s)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %v behind", left)
	}
	if _, err := RunSync(context.Background(), dir, Recipe{Size: 10, BlockSize: 2300}); err == nil {
		t.Error("a recipe smaller than one block ran")
	}
	if _, err := RunSync(context.Background(), dir+"/missing", EtcdRecipe); err == nil {
		t.Error("a missing directory ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunSync(ctx, dir, EtcdRecipe); err == nil {
		t.Error("a cancelled run returned no error")
	}
}

// TestRecipeValidate: etcd's recipe is valid; `bench disk`'s out-of-range recipes are refused.
func TestRecipeValidate(t *testing.T) {
	if err := EtcdRecipe.Validate(); err != nil {
		t.Fatalf("etcd's recipe: %v", err)
	}
	for _, bad := range []Recipe{{Size: 22 << 20, BlockSize: 511}, {Size: 22 << 20, BlockSize: 1<<20 + 1}, {Size: 1000, BlockSize: 2300}, {Size: 1<<30 + 1, BlockSize: 2300}} {
		if bad.Validate() == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

// TestSyncPairs: the timed loop writes every block in full, times every fdatasync, and stops on a write
// error, an fdatasync error or the stop flag, saying how many pairs it made.
func TestSyncPairs(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "pairs"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 2300)
	lat := make([]time.Duration, 50)
	var stop atomic.Bool
	n, elapsed, err := syncPairs(int(f.Fd()), buf, lat, &stop, false)
	if err != nil || n != 50 {
		t.Fatalf("%d pairs, %v", n, err)
	}
	var sum time.Duration
	for i, d := range lat {
		if d <= 0 {
			t.Errorf("sync %d timed %v", i, d)
		}
		sum += d
	}
	if st, _ := f.Stat(); st.Size() != 50*2300 || elapsed < sum {
		t.Errorf("file of %d bytes, elapsed %v for syncs of %v in all", st.Size(), elapsed, sum)
	}
	// The node agent's way (Recipe.Blocking: the scheduler knows the calls block) writes and times the same.
	n, _, err = syncPairs(int(f.Fd()), buf, lat, &stop, true)
	if st, _ := f.Stat(); err != nil || n != 50 || st.Size() != 100*2300 || slices.Contains(lat, 0) {
		t.Errorf("blocking: %d pairs, %v, file of %d bytes, latencies %v", n, err, st.Size(), lat)
	}

	// No allocation in the loop (no GC assist, no collection started by it).
	if a := testing.AllocsPerRun(3, func() { _, _, _ = syncPairs(int(f.Fd()), buf, lat[:10], &stop, false) }); a != 0 {
		t.Errorf("%v allocations per run", a)
	}

	stop.Store(true)
	if n, _, err := syncPairs(int(f.Fd()), buf, lat, &stop, false); n != 0 || !errors.Is(err, errStopped) {
		t.Errorf("stopped: %d pairs, %v", n, err)
	}
	stop.Store(false)

	// fdatasync on a pipe fails (EINVAL) after the write went in.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if n, _, err := syncPairs(int(w.Fd()), buf, lat, &stop, false); n != 0 || !errors.Is(err, unix.EINVAL) || !strings.HasPrefix(err.Error(), "fdatasync") {
		t.Errorf("pipe: %d pairs, %v", n, err)
	}
	// A write to a descriptor open for reading fails.
	if n, _, err := syncPairs(int(r.Fd()), buf, lat, &stop, false); n != 0 || !errors.Is(err, unix.EBADF) || !strings.HasPrefix(err.Error(), "writing") {
		t.Errorf("read end: %d pairs, %v", n, err)
	}
}

// TestSummaryNearestRank: the percentiles are nearest-rank (the smallest latency with at least q of them at or
// below it), as fio picks its percentile's histogram bucket; the recipe's 10,029 syncs of 1..10,029 µs in
// any order have p50 5,015 µs and p99 9,929 µs.
func TestSummaryNearestRank(t *testing.T) {
	const n = 10029
	r := &SyncResult{Sync: make([]time.Duration, n), Elapsed: 10 * time.Second}
	for i := range r.Sync {
		r.Sync[i] = time.Duration((i*7919)%n+1) * time.Microsecond // a permutation of 1..n (7919 is prime)
	}
	s := r.Summary()
	if s.P50 != 5015*time.Microsecond || s.P99 != 9929*time.Microsecond || s.Max != n*time.Microsecond || s.N != n || s.IOPS != 1002.9 {
		t.Errorf("summary %+v", s)
	}
}

// TestScramble: as fio's small_content_scramble, each whole 512-byte block gets its file offset at the
// 64-byte line the time and offset choose and the time at bytes 48-63; the partial block at the end and
// every other byte are left alone.
func TestScramble(t *testing.T) {
	buf := make([]byte, 2300)
	for i := range buf {
		buf[i] = 0xAA
	}
	const off, now = 4600, 3*1e9 + 5 // line (now^off)&7 = (3000000005^4600)&7 = 5, bytes 320-327
	scramble(buf, off, now)
	le := binary.LittleEndian
	for b := 0; b < 4; b++ {
		blk := buf[b*512 : b*512+512]
		if got := le.Uint64(blk[320:]); got != uint64(off+512*b) {
			t.Errorf("block %d: offset %d at line 5", b, got)
		}
		if s, ns := le.Uint64(blk[48:]), le.Uint64(blk[56:]); s != 3 || ns != 5 {
			t.Errorf("block %d: time %d.%09d", b, s, ns)
		}
		for i, c := range blk {
			if (i < 48 || i >= 64) && (i < 320 || i >= 328) && c != 0xAA {
				t.Fatalf("block %d: byte %d changed to %#x", b, i, c)
			}
		}
	}
	for i, c := range buf[2048:] {
		if c != 0xAA {
			t.Fatalf("the partial block's byte %d changed", i)
		}
	}
	// The next write's content differs from this one's, as on a device it must.
	before := append([]byte(nil), buf...)
	scramble(buf, off+2300, now+1000)
	if string(before) == string(buf) {
		t.Error("two writes with the same content")
	}
}

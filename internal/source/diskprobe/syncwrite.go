// Package diskprobe is what kubeslow reads of a disk, the way etcd and a container runtime use it: the sync-write
// probe (sequential small writes, each made durable with fdatasync, timed one by one: etcd's fio recipe; RunSync)
// and a node's disk activity over time (Sampler). The node agent, `kubeslow agent disk-sample` and the disk
// benchmarks run them; internal/measure/disk judges what they read (etcd's verdict, KS-DISK-SYNC).
package diskprobe

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/spf13/pflag"
)

// Recipe is a sequential write test: BlockSize-byte writes up to Size bytes, fdatasync after each.
type Recipe struct {
	Size      int64
	BlockSize int
	// Blocking makes the write and fdatasync system calls through unix.Syscall, which tells the Go scheduler
	// they block, instead of unix.RawSyscall (see syncPairs): a disk that does not answer then holds no P and
	// delays no stop-the-world, so the rest of the process goes on. The node agent's probe sets it: it must
	// report a hung disk, and reads milliseconds, where the runtime's microseconds in the interval do not
	// matter. bench disk, compared with fio to the microsecond, does not.
	Blocking bool
}

// EtcdRecipe is etcd's fio recipe: 2,300-byte writes (about a WAL entry) up to 22 MiB.
var EtcdRecipe = Recipe{Size: 22 << 20, BlockSize: 2300}

// Validate checks the recipe's ranges as `bench disk` takes them: writes of 512 bytes to 1 MiB, from one
// write to 1 GiB in all.
func (r Recipe) Validate() error {
	if r.BlockSize < 512 || r.BlockSize > 1<<20 || r.Size < int64(r.BlockSize) || r.Size > 1<<30 {
		return fmt.Errorf("--block-size 512..1MiB and --size from one block to 1 GiB")
	}
	return nil
}

// AddFlags registers the recipe's flags, defaulting to r's values.
func (r *Recipe) AddFlags(fl *pflag.FlagSet) {
	fl.Int64Var(&r.Size, "size", r.Size, "bytes to write")
	fl.IntVar(&r.BlockSize, "block-size", r.BlockSize, "bytes per write (etcd's WAL entries are about 2,300)")
}

// SyncResult is one run of a Recipe.
type SyncResult struct {
	// Sync holds each fdatasync's latency, in order.
	Sync []time.Duration
	// Elapsed is the whole run's time, writes and syncs.
	Elapsed time.Duration
	Bytes   int64
}

// RunSync runs the recipe on a new file in dir and removes it. It makes the system calls fio makes for the
// recipe (seen with strace): the file's blocks allocated first (fallocate), then sequential write(2)s with an
// fdatasync(2) after each; only the fdatasync is timed per operation (fio's "sync" latency).
func RunSync(ctx context.Context, dir string, r Recipe) (*SyncResult, error) {
	return RunSyncFile(ctx, filepath.Join(dir, ".kubeslow-sync-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)), r)
}

// RunSyncFile is RunSync on a file of the given name, which must not exist; it is removed afterwards.
func RunSyncFile(ctx context.Context, path string, r Recipe) (*SyncResult, error) {
	if r.BlockSize <= 0 || r.Size < int64(r.BlockSize) {
		return nil, fmt.Errorf("recipe: block size %d and size %d: want 0 < block size <= size", r.BlockSize, r.Size)
	}
	// As fio lays out a file: create it and allocate its blocks, close it, then open it again for the job
	// and drop its cached pages.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer os.Remove(path)
	err = unix.Fallocate(int(f.Fd()), 0, 0, r.Size)
	f.Close()
	if err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return nil, fmt.Errorf("allocating %s: %w", path, err)
	}
	if f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		return nil, err
	}
	defer f.Close()
	fd := int(f.Fd())
	_ = unix.Fadvise(fd, 0, r.Size, unix.FADV_DONTNEED)
	_ = unix.Fadvise(fd, 0, r.Size, unix.FADV_SEQUENTIAL)
	// Random bytes, scrambled before each write as fio's are (scramble): a device that compresses (zram,
	// some SSDs and cloud volumes) writes a regular pattern faster than real data. On zram with a pattern
	// (byte(i*7+1)) the p50 and p99 came out 12-14% and 17-18% under fio's, with random bytes written
	// unchanged 8% and 9-11% (docs/disk.md).
	buf := make([]byte, r.BlockSize)
	_, _ = crand.Read(buf)
	n := int(r.Size / int64(r.BlockSize))
	res := &SyncResult{Sync: make([]time.Duration, n)}
	// A cancelled context stops the loop through a flag it reads between pairs (an atomic load: no channel
	// operation, no allocation, no call into the runtime in the loop).
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	// A collection under way when the loop starts (this process's start-up allocations begin one) would
	// stop the world, or scan the loop's stack, as soon as it can: the loop offers it no preemption point
	// but its yields, so the collector's thread would wait beside it, waking every 100 µs (seen with strace),
	// for up to yieldEvery. One finished here leaves none to come: the loop allocates nothing.
	runtime.GC()
	done, elapsed, err := syncPairs(fd, buf, res.Sync, &stop, r.Blocking)
	runtime.KeepAlive(f)
	if errors.Is(err, errStopped) {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	res.Sync, res.Elapsed, res.Bytes = res.Sync[:done], elapsed, int64(done)*int64(len(buf))
	return res, nil
}

var errStopped = errors.New("stopped")

// yieldEvery is how often (in the loop's own clock) syncPairs gives the scheduler a turn, between two pairs.
// The Go runtime's sysmon preempts a goroutine that has run for 10 ms without passing through the scheduler
// (forcePreemptNS in runtime/proc.go): it signals the thread (SIGURG), and the signal would mostly arrive
// while the thread sleeps in fdatasync, so its handler would run inside a timed interval; and a goroutine in
// a system call through unix.Syscall would instead lose its P to sysmon every 10 ms and have to take one
// back in exitsyscall, a wakeup of another thread and a lock inside the timed interval once every 10 ms
// (once in ~80 syncs of ~120 µs: just over 1%, i.e. the p99). A voluntary runtime.Gosched well inside 10 ms
// resets sysmon's count, so it never has to preempt the loop; it also lets a stop-the-world (a collection
// started by another goroutine) go ahead within a few ms, since the loop has no other preemption point.
const yieldEvery = 5 * time.Millisecond

// syncPairs makes len(lat) pairs of a write(2) of buf to fd and an fdatasync(2) of fd, and stores each
// fdatasync's duration in lat, in order. It returns the pairs made, the time they took in all and what
// stopped it early: a write or fdatasync error, or errStopped once stop is set.
//
// The timed interval (the fdatasync alone, as fio times its "sync" latency: from just before the call to
// just after it) holds nothing of the Go runtime:
//   - unix.RawSyscall, not unix.Syscall (which unix.Write and unix.Fdatasync use): Syscall tells the
//     scheduler the goroutine is blocked (entersyscall) and takes its P back afterwards (exitsyscall), and
//     if sysmon retook the P meanwhile, the goroutine has to find another one: a lock, and possibly a
//     wakeup of another thread and a wait for it. RawSyscall is only the system call (its whole call chain is
//     nosplit assembly and Go: no preemption check). The cost: the goroutine keeps its P while the call
//     blocks, so the program has one P fewer during the run (bench disk has nothing else to do), and a
//     stop-the-world waits for the call to return (up to one fdatasync) and then for the next yield.
//   - The clock is the runtime's monotonic clock, runtime.nanotime: clock_gettime(CLOCK_MONOTONIC) through
//     the vDSO (no system call while the kernel's clock source is the TSC or kvm-clock; ~0.1 µs here, where
//     a raw clock_gettime system call costs 0.5-0.7 µs), and nosplit, so no preemption point. time.Now and
//     time.Since read the same clock but are not inlined (Since's inlining cost is 282, over the budget of
//     80), and their prologues are preemption points: a preemption request pending there (a collection's
//     stack scan, say) would be served inside the interval. So between the two clock reads there is no
//     function prologue, hence no place where the runtime could take the goroutine off its thread: only the
//     system call.
//   - lat is allocated before the loop and indexed: no allocation (hence no GC assist) and no channel in
//     the loop; the stop flag is an atomic load.
//   - No runtime.LockOSThread: the goroutine does not leave its thread between yields anyway (it never
//     blocks in the scheduler and has no preemption point), and at a yield a locked goroutine would have to
//     hand its P to another thread and wait to be handed it back (two thread wakeups, each yield), where an
//     unlocked one is picked up again from the run queue, by its own thread or by the one the yield woke.
//
// The write is not timed; fio's write latency (clat) is its own section, not part of etcd's verdict.
func syncPairs(fd int, buf []byte, lat []time.Duration, stop *atomic.Bool, blocking bool) (int, time.Duration, error) {
	syscall := unix.RawSyscall
	if blocking {
		syscall = unix.Syscall // the scheduler knows the call blocks (Recipe.Blocking)
	}
	start := nanotime()
	since := func() time.Duration { return time.Duration(nanotime() - start) }
	yielded := start
	for i := range lat {
		if stop.Load() {
			return i, since(), errStopped
		}
		scramble(buf, int64(i)*int64(len(buf)), nanotime())
		for off := 0; off < len(buf); {
			// A regular file's write returns short only when the disk is full; the next one then fails.
			w, _, e := syscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&buf[off])), uintptr(len(buf)-off))
			if e != 0 {
				return i, since(), fmt.Errorf("writing: %w", e)
			}
			if w == 0 {
				return i, since(), fmt.Errorf("writing: %w", io.ErrShortWrite)
			}
			off += int(w)
		}
		t0 := nanotime()
		_, _, e := syscall(unix.SYS_FDATASYNC, uintptr(fd), 0, 0)
		t1 := nanotime()
		if e != 0 {
			return i, since(), fmt.Errorf("fdatasync: %w", e)
		}
		lat[i] = time.Duration(t1 - t0)
		if time.Duration(t1-yielded) >= yieldEvery {
			runtime.Gosched()
			yielded = nanotime()
		}
	}
	return len(lat), since(), nil
}

// scramble makes each write's content its own, as fio's default scramble_buffers does (small_content_scramble
// in fio's io_u.c), so that a device that compresses or deduplicates sees what it sees under fio: in each
// whole 512-byte block of buf, the block's offset in the file (off for the first, then +512) is written at
// one of the block's eight 64-byte lines chosen by the time and the offset, and the time (seconds,
// nanoseconds) at bytes 48-63. A block's other bytes keep their content.
func scramble(buf []byte, off, now int64) {
	line := int((now ^ off) & 7)
	for b := 0; b+512 <= len(buf); b += 512 {
		blk := buf[b : b+512]
		binary.LittleEndian.PutUint64(blk[line*64:], uint64(off))
		binary.LittleEndian.PutUint64(blk[48:], uint64(now/1e9))
		binary.LittleEndian.PutUint64(blk[56:], uint64(now%1e9))
		off += 512
	}
}

// nanotime is the runtime's monotonic clock in nanoseconds, the one time.Now's monotonic reading comes
// from. The runtime keeps it reachable by linkname on purpose ("all the code linknaming nanotime is never
// going to go away. Do not remove or change the type signature", runtime/time_nofake.go, go.dev/issue/67401).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// SyncSummary is what a run's latencies come to.
type SyncSummary struct {
	P50, P99, Max time.Duration
	// IOPS is write+fdatasync pairs per second over the run (what fio reports as the write IOPS).
	IOPS float64
	N    int
}

// Summary computes the percentiles and rate.
func (r *SyncResult) Summary() SyncSummary {
	v := make([]float64, len(r.Sync))
	for i, d := range r.Sync {
		v[i] = float64(d)
	}
	s := stats.Sorted(v)
	out := SyncSummary{N: len(s)}
	if len(s) == 0 {
		return out
	}
	out.P50, out.P99, out.Max = time.Duration(stats.Percentile(s, 0.5)), time.Duration(stats.Percentile(s, 0.99)), time.Duration(s[len(s)-1])
	if r.Elapsed > 0 {
		out.IOPS = float64(len(s)) / r.Elapsed.Seconds()
	}
	return out
}

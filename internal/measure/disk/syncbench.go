// Package disk measures a disk the way etcd and a container runtime use it: sequential small writes, each
// made durable with fdatasync, timed one by one (etcd's fio recipe), and a node's disk activity over time.
package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
	"github.com/spf13/pflag"
)

// BenchName is the result name of `kubeslow bench disk`.
const BenchName = "disk.fdatasync"

// MetricFdatasyncP99 is the p99 of fdatasync (rules read it through this name).
const MetricFdatasyncP99 = "fdatasync_p99"

// EtcdSyncP99 is etcd's guidance for its WAL disk: "the 99th percentile of fdatasync should be below 10ms"
// (etcd.io, Hardware recommendations / "Using fio to tell whether your storage is fast enough for etcd").
const EtcdSyncP99 = 10 * time.Millisecond

// EtcdSyncSource says where EtcdSyncP99 comes from.
const EtcdSyncSource = "etcd's hardware guidance: the 99th percentile of WAL fdatasync below 10 ms (fio --rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=2300)"

// Recipe is a sequential write test: BlockSize-byte writes up to Size bytes, fdatasync after each.
type Recipe struct {
	Size      int64
	BlockSize int
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
	buf := make([]byte, r.BlockSize)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	n := int(r.Size / int64(r.BlockSize))
	res := &SyncResult{Sync: make([]time.Duration, 0, n)}
	start := time.Now()
	for i := 0; i < n; i++ {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if _, err := unix.Write(fd, buf); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		t0 := time.Now()
		if err := unix.Fdatasync(fd); err != nil {
			return nil, fmt.Errorf("fdatasync %s: %w", path, err)
		}
		res.Sync = append(res.Sync, time.Since(t0))
		res.Bytes += int64(len(buf))
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

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

// BenchResult turns a run into the report's result, with etcd's verdict on the p99.
func BenchResult(where string, s SyncSummary, start, end time.Time) result.Result {
	labels := map[string]string{"path": where}
	sec := func(d time.Duration) float64 { return d.Seconds() }
	res := result.Result{Name: BenchName, Status: result.StatusPass, Start: start, End: end,
		Metrics: []result.Metric{
			{Name: "fdatasync_p50", Unit: "seconds", Value: sec(s.P50), Labels: labels},
			{Name: MetricFdatasyncP99, Unit: "seconds", Value: sec(s.P99), Labels: labels},
			{Name: "fdatasync_max", Unit: "seconds", Value: sec(s.Max), Labels: labels},
			{Name: "write_iops", Unit: "per_second", Value: s.IOPS, Labels: labels},
			{Name: "writes", Unit: "count", Value: float64(s.N), Labels: labels},
		}}
	if s.P99 >= EtcdSyncP99 {
		res.Status = result.StatusFail
		res.Reason = fmt.Sprintf("fdatasync p99 %s >= %s: too slow for etcd's WAL", round(s.P99), EtcdSyncP99)
	}
	return res
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

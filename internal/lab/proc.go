package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procRecord identifies a process the lab started. The start time (in clock ticks since boot) guards against
// PID reuse: a process is only ever signalled if both its PID and its start time match.
type procRecord struct {
	Name      string   `json:"name"`
	PID       int      `json:"pid"`
	StartTick uint64   `json:"startTick"`
	Argv      []string `json:"argv"`
	Log       string   `json:"log"`
	Cgroups   []string `json:"cgroups,omitempty"`
}

// processHierarchies are the cgroup hierarchies every lab process joins: pids (to find every descendant at
// teardown) and blkio (so that scenarios can throttle one component's disk I/O).
var processHierarchies = []string{"pids", "blkio"}

// processCgroups creates and returns the process's own cgroups, kubeslow-lab/<name> in each hierarchy that
// exists (the cgroup2 mount when there is no v1 pids hierarchy).
func processCgroups(name string) ([]string, error) {
	var out []string
	for _, h := range processHierarchies {
		root := filepath.Join("/sys/fs/cgroup", h)
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			continue
		}
		out = append(out, filepath.Join(labCgroup(root), name))
	}
	if len(out) == 0 {
		if root := cgroupRoot(); root != "" {
			out = append(out, filepath.Join(labCgroup(root), name))
		}
	}
	for _, cg := range out {
		if err := os.MkdirAll(cg, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", cg, err)
		}
	}
	return out, nil
}

// ProcessCgroup returns the directory of a lab process's cgroup in the given hierarchy ("blkio", "pids").
func ProcessCgroup(hierarchy, name string) string {
	return filepath.Join(labCgroup(filepath.Join("/sys/fs/cgroup", hierarchy)), name)
}

// cgroupRoot returns the hierarchy the lab puts its processes in (to find every descendant at teardown):
// the cgroup v1 pids hierarchy, else the cgroup2 mount; "" when neither exists.
func cgroupRoot() string {
	for _, p := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
			return p
		}
	}
	return ""
}

// labCgroup is the lab's parent cgroup in root.
func labCgroup(root string) string { return filepath.Join(root, "kubeslow-lab") }

// startProcess starts argv inside the network namespace ns, in its own session and cgroup, with output to
// a log file, and records it. It does not wait for readiness.
func startProcess(d Dirs, name, ns string, argv []string, env []string) (*procRecord, error) {
	if rec, err := readRecord(d, name); err == nil && rec.alive() {
		return rec, nil // idempotent: already running
	}
	if err := os.MkdirAll(d.LogDir(), 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(d.LogDir(), name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()

	full := append([]string{"nsenter", "--net=" + netnsPath(ns), "--"}, argv...)
	cgs, err := processCgroups(name)
	if err != nil {
		return nil, err
	}
	if len(cgs) > 0 {
		var procs []string
		for _, cg := range cgs {
			procs = append(procs, filepath.Join(cg, "cgroup.procs"))
		}
		// The shell puts itself into the cgroups, then execs: the process never runs outside them, and keeps its PID.
		full = append([]string{"sh", "-c", `for f in $KUBESLOW_CGROUPS; do echo $$ > "$f" || exit 1; done; exec "$@"`, "sh"}, full...)
		env = append(append([]string(nil), env...), "KUBESLOW_CGROUPS="+strings.Join(procs, " "))
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	// Reap it if it exits while this process lives (tests run the lab in-process); after we exit, init does.
	go func() { _ = cmd.Wait() }()
	tick, err := startTick(cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("%s exited at once (see %s): %w", name, logPath, err)
	}
	rec := &procRecord{Name: name, PID: cmd.Process.Pid, StartTick: tick, Argv: argv, Log: logPath, Cgroups: cgs}
	if err := writeRecord(d, rec); err != nil {
		_ = rec.stop(5 * time.Second)
		return nil, err
	}
	return rec, nil
}

func writeRecord(d Dirs, rec *procRecord) error {
	if err := os.MkdirAll(d.ProcDir(), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(d.ProcDir(), rec.Name+".json"), b, 0o644)
}

func readRecord(d Dirs, name string) (*procRecord, error) {
	b, err := os.ReadFile(filepath.Join(d.ProcDir(), name+".json"))
	if err != nil {
		return nil, err
	}
	var rec procRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("process record %s: %w", name, err)
	}
	return &rec, nil
}

// readRecords returns every process record, in no particular order.
func readRecords(d Dirs) ([]*procRecord, error) {
	entries, err := os.ReadDir(d.ProcDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*procRecord
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rec, err := readRecord(d, name)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// procStat returns a process's state letter and start time from /proc/PID/stat.
func procStat(pid int) (state byte, tick uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name is in parentheses and may contain spaces: parse after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// Fields after ')': state is field 3 of stat, starttime is field 22.
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	tick, err = strconv.ParseUint(f[19], 10, 64)
	return f[0][0], tick, err
}

func startTick(pid int) (uint64, error) {
	_, t, err := procStat(pid)
	return t, err
}

// alive reports whether the recorded process still runs (same PID, same start time, not a zombie).
func (r *procRecord) alive() bool {
	st, tick, err := procStat(r.PID)
	return err == nil && tick == r.StartTick && st != 'Z'
}

// stop sends SIGTERM, waits up to grace for the process to exit, then SIGKILL. Only the recorded process is
// signalled; waiting uses a pidfd, so there is no polling and no PID-reuse race.
func (r *procRecord) stop(grace time.Duration) error {
	if !r.alive() {
		return nil
	}
	fd, err := unix.PidfdOpen(r.PID, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return fmt.Errorf("pidfd for %s (%d): %w", r.Name, r.PID, err)
	}
	defer unix.Close(fd)
	if !r.alive() { // re-check after the pidfd pins the process identity
		return nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	if waitPidfd(fd, grace) {
		return nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	if !waitPidfd(fd, 10*time.Second) {
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", r.Name, r.PID)
	}
	return nil
}

// waitPidfd waits until the process behind fd exits, up to timeout.
func waitPidfd(fd int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// killCgroup kills every process still in the cgroup dir (descendants of what the lab started, e.g.
// container shims) and removes the directory. Only PIDs listed in the lab's own cgroup are signalled.
func killCgroup(ctx context.Context, dir string) error {
	for attempt := 0; ; attempt++ {
		pids, err := cgroupPIDs(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		if attempt == 5 {
			return fmt.Errorf("cgroup %s still has processes %v", dir, pids)
		}
		for _, pid := range pids {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			waitPidfd(fd, 5*time.Second)
			unix.Close(fd)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	// Children first.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			if err := killCgroup(ctx, filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing cgroup %s: %w", dir, err)
	}
	return nil
}

func cgroupPIDs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

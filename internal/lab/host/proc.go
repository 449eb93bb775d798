package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// Process identifies a process the lab started. The start time (in clock ticks since boot) guards against
// PID reuse: a process is only ever signalled if both its PID and its start time match.
type Process struct {
	Name      string   `json:"name"`
	PID       int      `json:"pid"`
	StartTick uint64   `json:"startTick"`
	Argv      []string `json:"argv"`
	Log       string   `json:"log"`
	Cgroups   []string `json:"cgroups,omitempty"`
}

// Records is the directory of process records (<dir>/<name>.json) and logs (<logs>/<name>.log).
type Records struct {
	Dir  string
	Logs string
}

// Start starts argv inside the network namespace ns, in its own session and in its own cgroups (see
// ProcessCgroups), with output to a log file, and records it. It does not wait for readiness. A process
// already recorded and alive under the same name is returned as it is.
func (rs Records) Start(name, ns string, argv []string, env []string) (*Process, error) {
	if rec, err := rs.Read(name); err == nil && rec.Alive() {
		return rec, nil // idempotent: already running
	}
	if err := os.MkdirAll(rs.Logs, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(rs.Logs, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()

	full := InNetns(ns, argv...)
	cgs, err := ProcessCgroups(name)
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
	inheritOnlyStdio.Do(closeInheritedOnExec)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	// Reap it if it exits while this process lives (tests run the lab in-process); after we exit, init does.
	go func() { _ = cmd.Wait() }()
	tick, err := StartTick(cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("%s exited at once (see %s): %w", name, logPath, err)
	}
	rec := &Process{Name: name, PID: cmd.Process.Pid, StartTick: tick, Argv: argv, Log: logPath, Cgroups: cgs}
	if err := rs.write(rec); err != nil {
		_ = rec.Stop(5 * time.Second)
		return nil, err
	}
	return rec, nil
}

// inheritOnlyStdio marks, once per kubeslow process, every descriptor it inherited as close-on-exec.
var inheritOnlyStdio sync.Once

// closeInheritedOnExec marks every open descriptor above stderr close-on-exec, so that a lab process gets only
// its standard input and output: Go opens its own descriptors close-on-exec, but one kubeslow inherited stays
// open across exec, and a daemon that kept it would hold it for the lab's life — flock(1)'s lock file around
// `kubeslow lab up` (the lab lock, /run/kubeslow-lab.lock) was held by every lab process until `lab down`.
func closeInheritedOnExec() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

func (rs Records) write(rec *Process) error {
	if err := os.MkdirAll(rs.Dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(rs.Dir, rec.Name+".json"), b, 0o644)
}

// Read returns the named process's record.
func (rs Records) Read(name string) (*Process, error) {
	b, err := os.ReadFile(filepath.Join(rs.Dir, name+".json"))
	if err != nil {
		return nil, err
	}
	var rec Process
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("process record %s: %w", name, err)
	}
	return &rec, nil
}

// All returns every process record, in no particular order.
func (rs Records) All() ([]*Process, error) {
	entries, err := os.ReadDir(rs.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Process
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rec, err := rs.Read(name)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// ProcStat returns a process's state letter and start time from /proc/PID/stat.
func ProcStat(pid int) (state byte, tick uint64, err error) {
	st, err := hostfs.Host().ProcStat(pid)
	return st.State, st.StartTick, err
}

// StartTick is a process's start time in clock ticks since boot.
func StartTick(pid int) (uint64, error) {
	_, t, err := ProcStat(pid)
	return t, err
}

// Alive reports whether the recorded process still runs (same PID, same start time, not a zombie).
func (r *Process) Alive() bool {
	st, tick, err := ProcStat(r.PID)
	return err == nil && tick == r.StartTick && st != 'Z'
}

// pin opens a pidfd on the recorded process if it still runs, re-checking its identity once the pidfd holds
// it (no PID-reuse race after that); ok is false when it is gone.
func (r *Process) pin() (fd int, ok bool, err error) {
	if !r.Alive() {
		return -1, false, nil
	}
	fd, err = unix.PidfdOpen(r.PID, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return -1, false, nil
		}
		return -1, false, fmt.Errorf("pidfd for %s (%d): %w", r.Name, r.PID, err)
	}
	if !r.Alive() {
		unix.Close(fd)
		return -1, false, nil
	}
	return fd, true, nil
}

// Stop sends SIGTERM, waits up to grace for the process to exit, then SIGKILL. Only the recorded process is
// signalled; waiting uses a pidfd, so there is no polling and no PID-reuse race.
func (r *Process) Stop(grace time.Duration) error {
	fd, ok, err := r.pin()
	if !ok {
		return err
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	// A process paused (Signal's SIGSTOP) acts on the SIGTERM once continued.
	if err := unix.PidfdSendSignal(fd, unix.SIGCONT, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
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

// Signal sends sig to the recorded process if it still runs (its PID and start time, pinned by a pidfd): e.g.
// SIGSTOP and SIGCONT to pause a scenario's load and resume it.
func (r *Process) Signal(sig unix.Signal) error {
	fd, ok, err := r.pin()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s (pid %d) is not running", r.Name, r.PID)
	}
	defer unix.Close(fd)
	return unix.PidfdSendSignal(fd, sig, nil, 0)
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

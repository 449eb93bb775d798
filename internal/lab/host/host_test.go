package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestProcStatParsesOwnProcess(t *testing.T) {
	st, tick, err := ProcStat(1)
	if err != nil || tick == 0 || st == 0 {
		t.Fatalf("ProcStat(1) = %c %d %v", st, tick, err)
	}
	if _, _, err := ProcStat(1 << 30); err == nil {
		t.Fatal("procStat of a non-existent pid succeeded")
	}
}

// TestCloseInheritedOnExec: a descriptor open without close-on-exec (as flock(1)'s lock file is in the kubeslow
// it runs) reaches a child before closeInheritedOnExec and not after: lab processes get only stdio.
func TestCloseInheritedOnExec(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := syscall.Dup(int(f.Fd())) // dup(2) clears close-on-exec
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	childSees := func() bool {
		out, err := exec.Command("sh", "-c", "ls /proc/self/fd").Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Fields(string(out)) {
			if l == strconv.Itoa(fd) {
				return true
			}
		}
		return false
	}
	if !childSees() {
		t.Fatalf("fd %d without close-on-exec did not reach the child: the test cannot tell", fd)
	}
	closeInheritedOnExec()
	if childSees() {
		t.Errorf("fd %d still reaches a child after closeInheritedOnExec", fd)
	}
}

// TestFreeSpace: a path not made yet is measured on its nearest existing parent; a path under a file is an error.
func TestFreeSpace(t *testing.T) {
	dir := t.TempDir()
	free, size, err := FreeSpace(dir)
	if err != nil || size == 0 || free > size {
		t.Fatalf("FreeSpace(%s) = %d, %d, %v", dir, free, size, err)
	}
	_, size2, err := FreeSpace(filepath.Join(dir, "not", "yet", "made"))
	if err != nil || size2 != size {
		t.Fatalf("FreeSpace of a path not made yet = size %d, %v; want its parent's size %d", size2, err, size)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := FreeSpace(filepath.Join(file, "below")); err == nil {
		t.Fatal("FreeSpace of a path under a regular file: no error")
	}
}

// TestSignalPauseAndStop: Signal pauses and resumes the recorded process (SIGSTOP, SIGCONT: state T, then not),
// Stop ends a paused one on its SIGTERM within the grace (no SIGKILL needed), and a process that is gone is not
// signalled.
func TestSignalPauseAndStop(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan *os.ProcessState, 1)
	go func() {
		_ = cmd.Wait() // reaps it: once gone, not a zombie that Alive would skip anyway
		exited <- cmd.ProcessState
	}()
	tick, err := StartTick(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{Name: "sleep", PID: cmd.Process.Pid, StartTick: tick}
	// The kernel sets the state as it delivers the signal: wait for it on the process's own state.
	state := func(stopped bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			st, _, err := ProcStat(p.PID)
			if err == nil && (st == 'T') == stopped {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("state %c (%v), want stopped %v", st, err, stopped)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := p.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	state(true)
	if err := p.Signal(unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	state(false)
	if err := p.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	state(true)
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if ps := <-exited; ps.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("the paused process ended by %v, want its SIGTERM", ps)
	}
	if err := p.Signal(unix.SIGCONT); err == nil {
		t.Error("a process that is gone was signalled")
	}
}

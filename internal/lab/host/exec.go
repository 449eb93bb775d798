// Package host is the lab's host plumbing: short system commands, network namespaces, mounts, loop disks,
// cgroups and the processes the lab starts (recorded by PID and start time, stopped by pidfd). It knows
// nothing about Kubernetes; internal/lab composes it, and internal/lab/netlab uses its network namespaces.
package host

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Short is the time-out for quick system commands (ip, mount, losetup, ...).
const Short = 30 * time.Second

// Run executes a system command with a time-out and returns its trimmed output. The error includes the
// command and its output, so a failure explains itself.
func Run(ctx context.Context, timeout time.Duration, name string, args ...string) (string, error) {
	return RunInput(ctx, timeout, nil, name, args...)
}

// RunInput is Run with stdin (nil: none).
func RunInput(ctx context.Context, timeout time.Duration, stdin []byte, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	s := strings.TrimSpace(out.String())
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return s, fmt.Errorf("%s %s: timed out after %s", name, strings.Join(args, " "), timeout)
		}
		return s, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, s)
	}
	return s, nil
}

// WriteFileAtomic writes data to path through a temporary file and a rename, so readers never see half a file.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Tail is the last n lines of the file at path ("" if it cannot be read): for errors that point at a log.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

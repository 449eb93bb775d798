package lab

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// run executes a short system command (ip, mount, ...) with a time-out and returns its trimmed output.
// The error includes the command and its output, so a failure explains itself.
func run(ctx context.Context, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
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

// short is the time-out for quick system commands.
const short = 30 * time.Second

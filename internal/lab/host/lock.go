package host

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive flock(2) on path (created if missing), waiting for another holder; logf says that it
// waits, and for how long it did. The lock is held until the returned file is closed, or its process ends.
func Lock(path, what string, logf func(string, ...any)) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the %s %s: %w", what, path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		logf("waiting for the %s %s (another process holds it)", what, path)
		start := time.Now()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("taking the %s %s: %w", what, path, err)
		}
		logf("took the %s after %s", what, time.Since(start).Round(time.Second))
	}
	return f, nil
}

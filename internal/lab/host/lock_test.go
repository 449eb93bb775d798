package host

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLock: a second holder waits, says so, and gets the lock only once the first lets go.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "build.lock")
	first, err := Lock(path, "test lock", func(format string, args ...any) { t.Errorf("first holder waited: "+format, args...) })
	if err != nil {
		t.Fatal(err)
	}
	var released atomic.Bool
	waiting := make(chan string, 1)
	got := make(chan error, 1)
	go func() {
		second, err := Lock(path, "test lock", func(format string, args ...any) {
			if line := fmt.Sprintf(format, args...); strings.HasPrefix(line, "waiting") {
				waiting <- line
			}
		})
		if err == nil {
			if !released.Load() {
				err = errors.New("the second holder got the lock while the first held it")
			}
			_ = second.Close()
		}
		got <- err
	}()
	line := <-waiting // said before it blocks
	if !strings.Contains(line, path) {
		t.Errorf("the wait names no lock file: %q", line)
	}
	released.Store(true)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

package podstartup

import (
	"testing"

	"k8s.io/utils/clock"
)

// TestSetWant: pods whose creates were refused are not waited for; AllRunning closes once the pods that
// exist run, and never twice.
func TestSetWant(t *testing.T) {
	c := NewCollector(nil, "ns", "", clock.RealClock{}, 5)
	c.running = 3
	c.SetWant(4)
	select {
	case <-c.AllRunning():
		t.Fatal("closed with 3 of 4 running")
	default:
	}
	c.SetWant(3)
	select {
	case <-c.AllRunning():
	default:
		t.Fatal("not closed with 3 of 3 running")
	}
	c.SetWant(2) // already closed: no second close (a panic)
	d := NewCollector(nil, "ns", "", clock.RealClock{}, 2)
	d.running = 2
	close(d.allRunning) // as handle does at 2 of 2
	d.SetWant(1)
}

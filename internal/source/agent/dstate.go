package agent

import (
	"context"
	"sort"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// DState is what a window of samples showed of the processes in uninterruptible sleep (state D: waiting
// on I/O that does not return, case C's udevd and kworkers).
type DState struct {
	// Samples taken over WindowSeconds.
	Samples       int     `json:"samples"`
	WindowSeconds float64 `json:"window_seconds"`
	// Max is the most processes in D state in one sample; Persistent those in D in every sample.
	Max        int `json:"max"`
	Persistent int `json:"persistent"`
	// Procs are the processes seen in D, longest first (at most 10).
	Procs []DProc `json:"procs,omitempty"`
}

// DProc is one process seen in D state.
type DProc struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
	// Seconds is how long it was seen in D: from the first to the last sample that found it there (a lower
	// bound of its time in D; 0 when one sample saw it).
	Seconds float64 `json:"seconds"`
	Samples int     `json:"samples"`
}

// SampleDState samples proc n times, every interval (n >= 1), and says which processes stayed in D.
func SampleDState(ctx context.Context, proc string, n int, interval time.Duration) (*DState, error) {
	type seen struct {
		comm        string
		first, last time.Time
		samples     int
	}
	all := map[int]*seen{}
	d := &DState{}
	start := time.Now()
	for i := 0; i < n; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				i = n
				continue
			case <-time.After(interval):
			}
		}
		now := time.Now()
		s, err := hostfs.FS{Proc: proc}.DStateTasks()
		if err != nil {
			return nil, err
		}
		d.Samples++
		d.Max = max(d.Max, len(s))
		for pid, comm := range s {
			p := all[pid]
			if p == nil {
				p = &seen{comm: comm, first: now}
				all[pid] = p
			}
			p.last, p.samples = now, p.samples+1
		}
	}
	d.WindowSeconds = time.Since(start).Seconds()
	for pid, p := range all {
		if p.samples == d.Samples {
			d.Persistent++
		}
		d.Procs = append(d.Procs, DProc{PID: pid, Comm: p.comm, Seconds: p.last.Sub(p.first).Seconds(), Samples: p.samples})
	}
	sort.Slice(d.Procs, func(i, j int) bool {
		if d.Procs[i].Samples != d.Procs[j].Samples {
			return d.Procs[i].Samples > d.Procs[j].Samples
		}
		return d.Procs[i].PID < d.Procs[j].PID
	})
	if len(d.Procs) > 10 {
		d.Procs = d.Procs[:10]
	}
	return d, nil
}

package promql

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Bounds of a window and of its time profiles.
const (
	// MaxPoints is the most points a time profile has: the step is the window divided by it (never below MinStep).
	MaxPoints = 120
	// MinStep is the finest step of a profile.
	MinStep = 5 * time.Second
	// MinRate is the shortest rate() window in profiles: four samples at a 15 s scrape interval.
	MinRate = time.Minute
	// MinWindow and MaxWindow bound the window a run diagnoses.
	MinWindow = time.Minute
	// The window's totals are increase() over the whole window, which loads every sample of the series read:
	// a day bounds that (and Prometheus's own --query.max-samples refuses more, with a clear error).
	MaxWindow = 24 * time.Hour
)

// Window is the past interval a run diagnoses, and how its profiles sample it.
type Window struct {
	From, To time.Time
	// Step is the profiles' resolution; Rate the rate() window of each profile point.
	Step, Rate time.Duration
}

// NewWindow makes the window [from, to], or [now-last, now] when last is set. step 0 chooses the step so that a
// profile has at most MaxPoints points.
func NewWindow(from, to time.Time, last, step time.Duration, now time.Time) (Window, error) {
	if last > 0 {
		if !from.IsZero() || !to.IsZero() {
			return Window{}, errors.New("--last excludes --from/--to")
		}
		from, to = now.Add(-last), now
	}
	if from.IsZero() || to.IsZero() {
		return Window{}, errors.New("a Prometheus run needs a window: --from and --to, or --last")
	}
	if !from.Before(to) {
		return Window{}, fmt.Errorf("--from %s is not before --to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	if to.After(now.Add(time.Minute)) {
		return Window{}, fmt.Errorf("--to %s is in the future", to.Format(time.RFC3339))
	}
	d := to.Sub(from)
	if d < MinWindow || d > MaxWindow {
		return Window{}, fmt.Errorf("window of %s: want %s to %s", d, MinWindow, MaxWindow)
	}
	if step <= 0 {
		step = (d + MaxPoints - 1) / MaxPoints
		step = step.Round(time.Second)
		if step < MinStep {
			step = MinStep
		}
	}
	if d/step > MaxPoints {
		return Window{}, fmt.Errorf("--prometheus-step %s gives %d points over %s: at most %d", step, d/step, d, MaxPoints)
	}
	rate := 2 * step
	if rate < MinRate {
		rate = MinRate
	}
	return Window{From: from.UTC(), To: to.UTC(), Step: step, Rate: rate}, nil
}

// Duration is the window's length.
func (w Window) Duration() time.Duration { return w.To.Sub(w.From) }

// Range is the query range of the window's profiles.
func (w Window) Range() v1.Range { return v1.Range{Start: w.From, End: w.To, Step: w.Step} }

// PromDuration renders d as PromQL does ("90s", "1h").
func PromDuration(d time.Duration) string { return model.Duration(d.Round(time.Second)).String() }

// String is the window as it is written in findings: "2026-11-23T14:50:00Z..15:10:00Z (20m)".
func (w Window) String() string {
	to := w.To.Format(time.RFC3339)
	if w.From.Format("2006-01-02") == w.To.Format("2006-01-02") {
		to = w.To.Format("15:04:05Z")
	}
	return fmt.Sprintf("%s..%s (%s)", w.From.Format(time.RFC3339), to, PromDuration(w.Duration()))
}

// ParseTime reads a point in time: RFC 3339 ("2026-11-23T14:58:00Z", with or without seconds or a zone, UTC
// then), Unix seconds, "now", or "now-30m" (a Go duration before now).
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if s == "now" {
		return now, nil
	}
	if rest, ok := strings.CutPrefix(s, "now-"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("time %q: want now-<duration>, e.g. now-30m", s)
		}
		return now.Add(-d), nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if secs < 0 || secs > 1e11 {
			return time.Time{}, fmt.Errorf("time %q: Unix seconds out of range", s)
		}
		return time.Unix(0, int64(secs*1e9)).UTC(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-11-23T14:58:00Z), Unix seconds, now or now-<duration>", s)
}

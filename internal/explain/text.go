package explain

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// MaxTextPods is how many pods' full timelines the text shows (the slowest); the rest get one line each.
const MaxTextPods = 5

// WriteText renders x for a terminal: the verdicts first, then the workload's view, then the timelines.
func WriteText(w io.Writer, x *result.Explanation) error {
	ew := &errWriter{w: w}
	t := x.Target
	ew.printf("kubeslow explain %s %s/%s — %s, %d pod(s), read %s\n", t.Kind, t.Namespace, t.Name, t.Selection, len(x.Pods), x.Read.UTC().Format(time.RFC3339))
	if len(x.Verdicts) == 0 {
		ew.printf("\nVERDICT: nothing to explain: no step of 1 s or more, and no failure Event\n")
	} else {
		ew.printf("\nVERDICT (%d), the longest first\n", len(x.Verdicts))
		for i, f := range x.Verdicts {
			ew.printf("%2d. [%s] %s  %s\n", i+1, f.Severity, f.ID, f.Title)
			ew.printf("    %s\n", f.Summary)
			var evs []string
			for _, e := range f.Evidence {
				evs = append(evs, fmt.Sprintf("%s=%s", e.Name, result.FormatQuantity(e.Value, e.Unit)))
			}
			ew.printf("    evidence: %s\n", strings.Join(evs, ", "))
			ew.printf("    threshold: %s %s — %s\n", f.Threshold.Op, result.FormatQuantity(f.Threshold.Value, f.Threshold.Unit), f.Threshold.Source)
			ew.printf("    fix: %s\n", f.Remediation)
			if f.ItemCount > 1 {
				var items []string
				for _, it := range f.Items[:min(len(f.Items), 5)] {
					items = append(items, fmt.Sprintf("%s (%s)", it.Key, result.FormatValue(it.Value)))
				}
				more := ""
				if f.ItemCount > len(items) {
					more = fmt.Sprintf(" and %d more", f.ItemCount-len(items))
				}
				ew.printf("    on: %s%s\n", strings.Join(items, ", "), more)
			}
		}
	}
	if len(x.OutOfReach) > 0 {
		ew.printf("\nOUT OF REACH\n")
		for _, o := range x.OutOfReach {
			ew.printf("  - %s: %s\n    fix: %s\n", o.Signal, o.Why, o.Fix)
		}
	}
	if wv := x.Workload; wv != nil {
		ew.printf("\nACROSS %d POD(S): %d Ready; dominant step: %s\n", wv.Pods, wv.Ready, firstNonEmpty(wv.Dominant, "none"))
		tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  step\tpods\tmedian\tmax\tslowest pod\tshare\n")
		for _, p := range wv.Phases {
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%.0f%%\n", p.Name, p.Pods, secs(p.MedianSeconds), secs(p.MaxSeconds), p.MaxPod, 100*p.Share)
		}
		_ = tw.Flush()
		if j := wv.Job; j != nil {
			ew.printf("  Job: created %s → all Running %s → all Ready %s", j.Created.UTC().Format(time.TimeOnly), reached(j.AllRunning, j.ToRunningSeconds), reached(j.AllReady, j.ToReadySeconds))
			if j.Note != "" {
				ew.printf(" (%s)", j.Note)
			}
			ew.printf("\n")
		}
		if len(x.Pods) > MaxTextPods {
			ew.printf("\n  every pod, slowest first:\n")
			tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', 0)
			for _, pt := range x.Pods {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", pt.Name, pt.Node, secs(pt.Seconds), readyWord(pt.Ready))
			}
			_ = tw.Flush()
		}
	}
	for i, pt := range x.Pods {
		if i == MaxTextPods {
			ew.printf("\n(%d more pod(s): -o json has every timeline)\n", len(x.Pods)-MaxTextPods)
			break
		}
		writePod(ew, pt)
	}
	return ew.err
}

func reached(t time.Time, sec float64) string {
	if t.IsZero() {
		return "not reached"
	}
	return fmt.Sprintf("%s (+%s)", t.UTC().Format(time.TimeOnly), secs(sec))
}

func readyWord(r bool) string {
	if r {
		return "Ready"
	}
	return "not Ready"
}

func writePod(ew *errWriter, pt result.PodTimeline) {
	node := pt.Node
	if node == "" {
		node = "no node"
	}
	ew.printf("\nPOD %s on %s: %s from creation (%s), created %s", pt.Name, node, secs(pt.Seconds), readyWord(pt.Ready), pt.Created.UTC().Format(time.RFC3339))
	if pt.Restarts > 0 {
		ew.printf(", %d restart(s)", pt.Restarts)
	}
	ew.printf("\n")
	tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  step\tstart\tseconds\tprecision\tstatus\tsource\n")
	for _, s := range pt.Steps {
		name := s.Name
		if s.Within != "" {
			name = "  " + name
		}
		start := "-"
		if !s.Start.IsZero() {
			start = s.Start.UTC().Format("15:04:05.000000")
			if s.Start.Nanosecond() == 0 {
				start = s.Start.UTC().Format(time.TimeOnly)
			}
		}
		sec := result.FormatValue(s.Seconds)
		if s.UpperBound {
			sec = "≤" + sec
		}
		if s.Status == result.StepNotMeasured || s.Status == result.StepUnknown {
			sec = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", name, start, sec, s.Precision, s.Status, s.Source)
	}
	_ = tw.Flush()
	for _, s := range pt.Steps {
		var extra []string
		if len(s.Values) > 0 {
			keys := make([]string, 0, len(s.Values))
			for k := range s.Values {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var kv []string
			for _, k := range keys {
				kv = append(kv, k+"="+result.FormatValue(s.Values[k]))
			}
			extra = append(extra, strings.Join(kv, " "))
		}
		if len(s.Details) > 0 {
			extra = append(extra, result.FormatLabels(s.Details))
		}
		if s.Note != "" {
			extra = append(extra, s.Note)
		}
		if len(extra) == 0 && len(s.Events) == 0 {
			continue
		}
		ew.printf("  %s: %s\n", s.Name, strings.Join(extra, "; "))
		for _, e := range s.Events {
			ew.printf("    %s ×%d (%s–%s, %s): %s\n", e.Reason, e.Count, clock(e.First, e.Precision), clock(e.Last, e.Precision), e.Precision, e.Message)
		}
	}
	c := pt.Events
	switch {
	case !c.Readable:
		ew.printf("  events: not readable: %s\n", c.Note)
	case c.Note != "":
		ew.printf("  events: %d; %s; from conditions only: %s\n", c.Count, c.Note, strings.Join(c.FromConditionsOnly, ", "))
	default:
		ew.printf("  events: %d\n", c.Count)
	}
}

func clock(t time.Time, precision string) string {
	if precision == result.PrecisionMicrosecond {
		return t.UTC().Format("15:04:05.000000")
	}
	return t.UTC().Format(time.TimeOnly)
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }

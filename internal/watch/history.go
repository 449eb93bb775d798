package watch

import (
	"encoding/json"
	"time"
)

// Bounds of one history entry.
const (
	maxErrorBytes      = 512
	maxHistoryFindings = 20
)

// summary is one cycle in /history.
type summary struct {
	Seq     int       `json:"cycle"`
	RunID   string    `json:"runID,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	Result  string    `json:"result"`
	Error   string    `json:"error,omitempty"`
	Ran     int       `json:"ran"`
	Skipped int       `json:"skipped"`
	Errored int       `json:"errored"`
	// Findings are the tracked findings after this cycle (at most maxHistoryFindings, firing first).
	Findings []FindingState `json:"findings,omitempty"`
}

// history keeps the last cycles' summaries, bounded by count and by the bytes of their JSON.
type history struct {
	maxN, maxBytes int
	entries        []json.RawMessage // oldest first
	bytes          int
}

func newHistory(n, bytes int) *history { return &history{maxN: n, maxBytes: bytes} }

func (h *history) add(s summary) {
	b, err := json.Marshal(s)
	if err != nil {
		return
	}
	h.entries = append(h.entries, b)
	h.bytes += len(b)
	for len(h.entries) > 1 && (len(h.entries) > h.maxN || h.bytes+len(h.entries)+1 > h.maxBytes) {
		h.bytes -= len(h.entries[0])
		h.entries[0] = nil
		h.entries = h.entries[1:]
	}
}

// json is the history, newest first, as one JSON array.
func (h *history) json() []byte {
	out := make([]byte, 0, h.bytes+len(h.entries)+2)
	out = append(out, '[')
	for i := len(h.entries) - 1; i >= 0; i-- {
		out = append(out, h.entries[i]...)
		if i > 0 {
			out = append(out, ',')
		}
	}
	return append(out, ']', '\n')
}

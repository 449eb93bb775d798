package labtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kubeslow/kubeslow/internal/lab"
)

// CreditLog is the lab's credit controller's log (lab.CreditProcess): its JSON-lines events, which the tests
// read for the real knee of a disk's burst credits.
func CreditLog(d lab.Dirs) string { return filepath.Join(d.LogDir(), lab.CreditProcess+".log") }

// ReadCreditEvents parses the credit controller's event log.
func ReadCreditEvents(r io.Reader) ([]lab.CreditEvent, error) {
	var out []lab.CreditEvent
	dec := json.NewDecoder(r)
	for {
		var e lab.CreditEvent
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("credit events: %w", err)
		}
		out = append(out, e)
	}
}

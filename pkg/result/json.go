package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Encode writes the report as indented JSON. It refuses a report that fails Validate, so that nothing
// downstream ever reads a half-formed document.
func Encode(w io.Writer, r *Report) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("invalid report: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Decode reads a report written by Encode. Unknown fields are rejected, so a report from a newer,
// incompatible schema fails loudly instead of losing data silently.
func Decode(rd io.Reader) (*Report, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding report: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

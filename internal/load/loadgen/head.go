package loadgen

import (
	"bytes"
	"fmt"
)

// head is a response's status line and headers, parsed from a buffer.
type head struct {
	code int
	keep bool
	// length of the body: -1 when the response has none declared.
	length int64
	// size of the status line and headers, with the blank line.
	size int
}

// toClose reports whether the body runs to the end of the connection (no length, and a status that has a
// body).
func (h *head) toClose() bool {
	return h.length < 0 && h.code >= 200 && h.code != 204 && h.code != 304
}

// maxHead bounds a response's status line and headers.
const maxHead = 8 << 10

var crlfcrlf = []byte("\r\n\r\n")

// parseHead parses the status line and headers at the start of b. It returns ok=false when b does not hold
// them all yet (and an error when they can no longer fit in maxHead).
func parseHead(b []byte) (h head, ok bool, err error) {
	end := bytes.Index(b, crlfcrlf)
	if end < 0 {
		if len(b) >= maxHead {
			return h, false, errProtocolf("response head over %d bytes", maxHead)
		}
		return h, false, nil
	}
	h.size, h.length = end+4, -1
	lines := b[:end+2]
	line, rest, _ := bytes.Cut(lines, []byte("\n"))
	if h.code, h.keep, err = statusLine(line); err != nil {
		return h, false, err
	}
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if err := headerField(line, &h.length, &h.keep); err != nil {
			return h, false, err
		}
	}
	return h, true, nil
}

func errProtocolf(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errProtocol}, a...)...)
}

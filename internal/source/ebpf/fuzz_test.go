package ebpf

import (
	"os"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the two parsers of what the kernel hands over: a tracepoint's format
// file and a ring buffer record. Neither may panic; a decoded event re-encodes to the same event.
func FuzzDecode(f *testing.F) {
	if text, err := os.ReadFile("testdata/inet_sock_set_state.format"); err == nil {
		f.Add(text)
	}
	f.Add(make([]byte, evSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if fields, err := parseFormat(string(b)); err == nil {
			_, _ = layoutFor(fields)
		}
		ev, err := decodeEvent(b)
		if err != nil {
			return
		}
		if again, err := decodeEvent(encodeEvent(ev)); err != nil || again != ev {
			t.Errorf("%+v re-encoded decodes as %+v (%v)", ev, again, err)
		}
	})
}

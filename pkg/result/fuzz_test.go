package result_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// FuzzDecode: `kubeslow report` and `kubeslow diff` read report files from users; whatever the bytes,
// Decode returns a valid report or an error, never panics, and what it accepts re-encodes and decodes to
// the same document.
func FuzzDecode(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "report.golden.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add(golden[:len(golden)/2])
	f.Add([]byte(`{"apiVersion":"kubeslow.dev/v1alpha1","kind":"Report"}`))
	f.Add([]byte(`{"apiVersion":"kubeslow.dev/v1alpha1","kind":"Report","results":[{"name":"a","status":"Bogus"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := result.Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		var b1 bytes.Buffer
		if err := result.Encode(&b1, r); err != nil {
			t.Fatalf("accepted report does not re-encode: %v", err)
		}
		r2, err := result.Decode(bytes.NewReader(b1.Bytes()))
		if err != nil {
			t.Fatalf("re-encoded report does not decode: %v", err)
		}
		var b2 bytes.Buffer
		if err := result.Encode(&b2, r2); err != nil || !bytes.Equal(b1.Bytes(), b2.Bytes()) {
			t.Fatalf("round trip not stable: %v", err)
		}
	})
}

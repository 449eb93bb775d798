package result_test

import (
	"testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{3: "3", 0.5: "0.5", 1234.5678: "1235", 12.345: "12.3", 0.000123: "0.000123", -2: "-2"} {
		if got := result.FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

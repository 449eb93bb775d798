package watch

import (
	"strings"
	"unicode/utf8"
)

// maxLabelValue bounds a label value taken from a report (a pod name, an error text, anything).
const maxLabelValue = 256

// labelName turns a report's label key into a valid Prometheus label name (the classic [a-zA-Z_][a-zA-Z0-9_]*,
// which every Prometheus version reads): other characters become '_', a leading digit gets a '_' before it,
// and the "__" prefix Prometheus reserves becomes "x__".
func labelName(k string) string {
	var b strings.Builder
	for i, r := range k {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	switch {
	case s == "":
		return "_"
	case strings.HasPrefix(s, "__"):
		return "x" + s
	}
	return s
}

// labelValue makes any string a valid label value: invalid UTF-8 replaced, at most maxLabelValue bytes (cut
// at a rune boundary). The exposition escapes quotes, backslashes and newlines itself.
func labelValue(v string) string {
	return truncate(strings.ToValidUTF8(v, "\uFFFD"), maxLabelValue)
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

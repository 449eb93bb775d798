package result

import (
	"sort"
	"strconv"
	"strings"
)

// FormatValue prints a number compactly: integers without decimals, large numbers rounded to an integer,
// others with 3 significant digits.
func FormatValue(v float64) string {
	if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	if (v >= 100 || v <= -100) && v < 1e15 && v > -1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// FormatQuantity prints a number with its unit as a reader expects it: "12 s", "3/min", "0.8" (counts and
// ratios carry no suffix).
func FormatQuantity(v float64, unit string) string {
	return FormatValue(v) + UnitSuffix(unit)
}

// UnitSuffix is how a unit follows a number in prose ("" for counts and ratios).
func UnitSuffix(unit string) string {
	switch unit {
	case "", "count", "ratio":
		return ""
	case "seconds":
		return " s"
	case "per_minute":
		return "/min"
	case "bytes_per_second":
		return " B/s"
	}
	return " " + unit
}

// FormatLabels prints labels as k=v pairs in key order.
func FormatLabels(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, " ")
}

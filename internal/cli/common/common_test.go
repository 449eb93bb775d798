package common

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestOutputFlagFormats: a command accepts exactly the formats it can write, and says which.
func TestOutputFlagFormats(t *testing.T) {
	report := &OutputFlag{}
	plain := &OutputFlag{Formats: []string{"text", "json"}}
	for _, c := range []struct {
		o      *OutputFlag
		format string
		ok     bool
	}{
		{report, "html", true}, {report, "junit", true}, {report, "yaml", false},
		{plain, "json", true}, {plain, "html", false}, {plain, "junit", false},
	} {
		c.o.Format = c.format
		err := c.o.Validate()
		if (err == nil) != c.ok {
			t.Errorf("formats %v, -o %s: %v", c.o.Formats, c.format, err)
		}
		if err != nil && c.o == plain && !strings.Contains(err.Error(), "want text, json") {
			t.Errorf("error %q does not list the formats", err)
		}
	}
	cmd := &cobra.Command{}
	plain.Add(cmd)
	if u := cmd.Flags().Lookup("output").Usage; strings.Contains(u, "html") || !strings.Contains(u, "text, json") {
		t.Errorf("help %q", u)
	}
}

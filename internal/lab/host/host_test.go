package host

import "testing"

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{`/a/b`: "/a/b", `/a\040b`: "/a b", `/x\011y\134z`: "/x\ty\\z"} {
		if got := UnescapeMountPath(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProcStatParsesOwnProcess(t *testing.T) {
	st, tick, err := ProcStat(1)
	if err != nil || tick == 0 || st == 0 {
		t.Fatalf("ProcStat(1) = %c %d %v", st, tick, err)
	}
	if _, _, err := ProcStat(1 << 30); err == nil {
		t.Fatal("procStat of a non-existent pid succeeded")
	}
}

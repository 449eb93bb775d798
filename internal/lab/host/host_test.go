package host

import "testing"

func TestProcStatParsesOwnProcess(t *testing.T) {
	st, tick, err := ProcStat(1)
	if err != nil || tick == 0 || st == 0 {
		t.Fatalf("ProcStat(1) = %c %d %v", st, tick, err)
	}
	if _, _, err := ProcStat(1 << 30); err == nil {
		t.Fatal("procStat of a non-existent pid succeeded")
	}
}

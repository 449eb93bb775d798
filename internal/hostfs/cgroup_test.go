package hostfs

import "testing"

// cpuStatV1 is cgroup v1's cpu.stat as this machine's kernel writes it.
const cpuStatV1 = "nr_periods 1200\nnr_throttled 1104\nthrottled_time 96830112233\nnr_bursts 0\nburst_time 0\n"

func TestParseCPUStat(t *testing.T) {
	s, err := ParseCPUStat([]byte(cpuStatV1))
	if err != nil || s != (CPUStat{Periods: 1200, Throttled: 1104, ThrottledNanos: 96830112233}) {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []string{"nr_periods x\n", "nr_throttled -1\n"} {
		if _, err := ParseCPUStat([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if ns, err := ParseCPUAcctUsage([]byte("123456789\n")); err != nil || ns != 123456789 {
		t.Fatalf("%d %v", ns, err)
	}
	if _, err := ParseCPUAcctUsage([]byte("")); err == nil {
		t.Error("empty cpuacct.usage: no error")
	}
}

func FuzzParseCPUStat(f *testing.F) {
	f.Add([]byte(cpuStatV1))
	f.Add([]byte("nr_periods 9223372036854775808\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseCPUStat(b)
		if err == nil && (s.Periods < 0 || s.Throttled < 0 || s.ThrottledNanos < 0) {
			t.Fatalf("negative count %+v", s)
		}
		_, _ = ParseCPUAcctUsage(b)
	})
}

package hostfs

import (
	"math"
	"testing"
)

// cpuStatV1 is cgroup v1's cpu.stat as this machine's kernel writes it.
const cpuStatV1 = "nr_periods 1200\nnr_throttled 1104\nthrottled_time 96830112233\nnr_bursts 0\nburst_time 0\n"

func TestParseCPUStat(t *testing.T) {
	v1, err := ParseCPUStat([]byte("nr_periods 100\nnr_throttled 7\nthrottled_time 2500000000\n"))
	if err != nil || v1.Periods != 100 || v1.Throttled != 7 || v1.ThrottledSeconds != 2.5 || v1.UsageSeconds != -1 {
		t.Errorf("v1: %+v %v", v1, err)
	}
	v2, err := ParseCPUStat([]byte("usage_usec 3000000\nuser_usec 1\nsystem_usec 2\nnr_periods 10\nnr_throttled 3\nthrottled_usec 1500000\nnr_bursts 0\nburst_usec 0\n"))
	if err != nil || v2.Periods != 10 || v2.Throttled != 3 || v2.ThrottledSeconds != 1.5 || v2.UsageSeconds != 3 {
		t.Errorf("v2: %+v %v", v2, err)
	}
	// A v2 cgroup without the cpu controller has only usage.
	if u, err := ParseCPUStat([]byte("usage_usec 5\nuser_usec 3\nsystem_usec 2\n")); err != nil || u.UsageSeconds != 5e-6 {
		t.Errorf("usage only: %+v %v", u, err)
	}
	for _, bad := range []string{"", "nr_periods x\nnr_throttled 1\n", "nr_periods 1 2\n", "user_usec 1\n"} {
		if _, err := ParseCPUStat([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseCPUStatV1Machine(t *testing.T) {
	s, err := ParseCPUStat([]byte(cpuStatV1))
	if err != nil || s != (CPUStat{Periods: 1200, Throttled: 1104, ThrottledSeconds: 96.830112233, UsageSeconds: -1}) {
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
	f.Add([]byte("usage_usec 1\nnr_periods 1\nnr_throttled 0\nthrottled_usec 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseCPUStat(b)
		if err == nil && (s.ThrottledSeconds < 0 || (s.UsageSeconds < 0 && s.UsageSeconds != -1)) {
			t.Fatalf("%q: %+v", b, s)
		}
		_, _ = ParseCPUAcctUsage(b)
	})
}

func FuzzParseQuota(f *testing.F) {
	f.Add([]byte("max 100000"), []byte("-1"), []byte("100000"))
	f.Fuzz(func(t *testing.T, max, quota, period []byte) {
		if c, err := ParseCPUMax(max); err == nil && (c < 0 || c != c) {
			t.Fatalf("cpu.max %q: %v", max, c)
		}
		if c, err := ParseCFSQuota(quota, period); err == nil && (c < 0 || c != c) {
			t.Fatalf("cfs %q/%q: %v", quota, period, c)
		}
	})
}

func TestParseQuota(t *testing.T) {
	for in, want := range map[string]float64{"max 100000\n": 0, "50000 100000\n": 0.5, "200000 100000": 2} {
		if got, err := ParseCPUMax([]byte(in)); err != nil || got != want {
			t.Errorf("cpu.max %q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "max", "0 100000", "10 0", "x 100000", "1 2 3"} {
		if _, err := ParseCPUMax([]byte(bad)); err == nil {
			t.Errorf("cpu.max %q accepted", bad)
		}
	}
	if c, err := ParseCFSQuota([]byte("-1\n"), []byte("100000\n")); err != nil || c != 0 {
		t.Errorf("no quota: %v %v", c, err)
	}
	if c, err := ParseCFSQuota([]byte("10000\n"), []byte("100000\n")); err != nil || math.Abs(c-0.1) > 1e-12 {
		t.Errorf("10%%: %v %v", c, err)
	}
	for _, q := range [][2]string{{"0", "100000"}, {"-2", "100000"}, {"100", "0"}, {"x", "1"}} {
		if _, err := ParseCFSQuota([]byte(q[0]), []byte(q[1])); err == nil {
			t.Errorf("quota %q accepted", q)
		}
	}
}

func TestCgroupProcs(t *testing.T) {
	if pids, err := CgroupProcs("testdata/cgroup"); err != nil || len(pids) != 2 || pids[0] != 1 || pids[1] != 412 {
		t.Errorf("%v %v", pids, err)
	}
	if pids, err := CgroupProcs("testdata/cgroup/kubepods"); err != nil || len(pids) != 0 {
		t.Errorf("an empty cgroup: %v %v", pids, err)
	}
	if _, err := CgroupProcs("testdata/none"); err == nil {
		t.Error("a missing cgroup read")
	}
}

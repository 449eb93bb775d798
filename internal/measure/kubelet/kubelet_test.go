package kubelet

import (
	"testing"
)

func TestParseConfigz(t *testing.T) {
	c, err := ParseConfigz([]byte(`{"kubeletconfig":{"serializeImagePulls":false,"maxParallelImagePulls":5,"maxPods":110,"runtimeRequestTimeout":"2m0s"}}`))
	if err != nil || c.SerializeImagePulls == nil || *c.SerializeImagePulls || *c.MaxParallelImagePulls != 5 || c.MaxPods != 110 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"", "{}", `{"kubeletconfig":null}`, `{"kubeletconfig":{"maxPods":"x"}}`} {
		if _, err := ParseConfigz([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestAnalyzeDefaultsAndErrors(t *testing.T) {
	c, _ := ParseConfigz([]byte(`{"kubeletconfig":{"maxPods":110}}`))
	res := Analyze([]Node{{Name: "a", CPUs: 2, Config: c}, {Name: "b", Err: "forbidden"}}, nil, nil)
	if m := res.Metric(MetricSerializePulls, map[string]string{"node": "a"}); m == nil || m.Value != 1 {
		t.Errorf("serializeImagePulls unset is the kubelet's default, true: %+v", m)
	}
	if m := res.Metric(MetricMaxPodsPerCPU, map[string]string{"node": "a"}); m == nil || m.Value != 55 {
		t.Errorf("maxPods per CPU %+v", m)
	}
	if res.Metric(MetricNodesUnreadable, nil).Value != 1 || res.Status != "pass" && res.Status != "Pass" && res.Reason == "" {
		t.Errorf("unreadable kubelet not counted: %+v", res)
	}
}

func FuzzParseConfigz(f *testing.F) {
	f.Add([]byte(`{"kubeletconfig":{"serializeImagePulls":true,"maxPods":110}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := ParseConfigz(b); err == nil && c == nil {
			t.Fatal("nil config without error")
		}
	})
}

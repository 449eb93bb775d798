package netlab

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/lab/labtest"
)

// TestIntegrationLabNet runs `lab net`'s benchmark through three paths (the floor, the overlay, kube-proxy
// iptables NAT) with the real binary as server and client inside the namespaces: every path and connection
// mode is measured, ratios are against loopback, and nothing is left behind.
func TestIntegrationLabNet(t *testing.T) {
	if os.Getenv("KUBESLOW_INTEGRATION") == "" {
		t.Skip("integration test: set KUBESLOW_INTEGRATION=1 (needs root)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := Bench(ctx, BenchOptions{Binary: labtest.Binary(t), Paths: []string{"loopback", "vxlan", "nat-iptables-legacy-1000"},
		Services: []int{1000}, Duration: time.Second, Repeats: 2, Concurrency: 4, Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Status.Measured() {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	got := map[string]float64{}
	for _, m := range res.Metrics {
		got[m.Name+"/"+m.Labels["path"]+"/"+m.Labels["conn"]] = m.Value
	}
	for _, path := range []string{"loopback", "vxlan", "nat-iptables-legacy-1000"} {
		for _, conn := range []string{"keepalive", "new"} {
			rps, lo, hi := got["rps_median/"+path+"/"+conn], got["rps_min/"+path+"/"+conn], got["rps_max/"+path+"/"+conn]
			if rps <= 0 || lo > rps || rps > hi || got["latency_p99_median/"+path+"/"+conn] <= 0 {
				t.Errorf("%s %s: rps %v [%v, %v], p99 %v", path, conn, rps, lo, hi, got["latency_p99_median/"+path+"/"+conn])
			}
			if r := got["ratio_to_loopback/"+path+"/"+conn]; r <= 0 || path == "loopback" && r != 1 {
				t.Errorf("%s %s: ratio %v", path, conn, r)
			}
		}
	}
	for _, path := range []string{"loopback", "vxlan"} {
		if g := got["stream_gbit_median/"+path+"/"]; g <= 0 || got["rr_tps_median/"+path+"/"] <= 0 {
			t.Errorf("%s: tcp stream %v Gbit/s, rr %v/s", path, g, got["rr_tps_median/"+path+"/"])
		}
	}
	if _, ok := got["stream_gbit_median/nat-iptables-legacy-1000/"]; ok {
		t.Error("tcp tests ran on a NAT path (only HTTP is translated there)")
	}
	if len(res.Records) != 3 || res.Records[1].Values["mtu"] != 1450 {
		t.Errorf("records %+v", res.Records)
	}
	if left := Remaining(); len(left) != 0 {
		t.Fatalf("namespaces left: %v", left)
	}
}

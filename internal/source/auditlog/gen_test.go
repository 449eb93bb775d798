package auditlog

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// genLog writes n realistic Metadata-level audit events (kube-apiserver 1.36 shape): mostly controller
// traffic, plus a LIST-storming agent and a conflicting writer when asked.
func genLog(n int, listStorm, conflicts bool) []byte {
	var b bytes.Buffer
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		ts := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		user, ua, verb, res, name, ns, code := "system:serviceaccount:kube-system:replicaset-controller",
			"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:replicaset-controller",
			"create", "pods", fmt.Sprintf("web-%d", i), "default", 201
		switch {
		case listStorm && i%3 == 0:
			user, ua, verb, res, name, ns, code = "system:serviceaccount:monitoring:agent", "node-monitor/1.0 (linux/amd64) agent", "list", "events", "", "", 200
		case conflicts && i%5 == 1:
			user, ua, verb, res, name, ns, code = "system:serviceaccount:kube-system:calico-node", "calico-ipam/v3.27 (linux/amd64)", "update", "ipamblocks", "10-0-1-0-26", "", 409
		case i%7 == 2:
			verb, res, code = "get", "nodes", 200
		}
		ref := fmt.Sprintf(`{"resource":%q,"namespace":%q,"name":%q,"apiVersion":"v1"}`, res, ns, name)
		if name == "" {
			ref = fmt.Sprintf(`{"resource":%q,"apiVersion":"v1"}`, res)
		}
		fmt.Fprintf(&b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%08x-a6b3-4d29-8a08-a24161e8b133","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/%s","verb":%q,"user":{"username":%q,"uid":"48732b24-b648-440c-a47a-30181af26b24","groups":["system:serviceaccounts","system:authenticated"]},"sourceIPs":["198.19.255.1"],"userAgent":%q,"objectRef":%s,"responseStatus":{"metadata":{},"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q,"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"system:controller:replicaset-controller\""}}`+"\n",
			i, res, verb, user, ua, ref, code, ts.Format(time.RFC3339Nano), ts.Add(3*time.Millisecond).Format(time.RFC3339Nano))
	}
	return b.Bytes()
}

// writeBenchLog writes copies of genLog(50000, true, true) to path until it holds at least size bytes, and
// returns its size.
func writeBenchLog(path string, size int64) (int64, error) {
	chunk := genLog(50000, true, true)
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	var n int64
	for n < size {
		w, err := f.Write(chunk)
		if err != nil {
			f.Close()
			return n, err
		}
		n += int64(w)
	}
	return n, f.Close()
}

// TestWriteBenchLog writes the synthetic benchmark log for hack/bench-jq.sh: KUBESLOW_AUDIT_BENCH_LOG names
// the file, KUBESLOW_AUDIT_BENCH_MB its size (default 200). Skipped without them.
func TestWriteBenchLog(t *testing.T) {
	path := os.Getenv("KUBESLOW_AUDIT_BENCH_LOG")
	if path == "" {
		t.Skip("KUBESLOW_AUDIT_BENCH_LOG not set: writes hack/bench-jq.sh's input")
	}
	mb := int64(200)
	if v := os.Getenv("KUBESLOW_AUDIT_BENCH_MB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			t.Fatalf("KUBESLOW_AUDIT_BENCH_MB=%q: want a positive number of MB", v)
		}
		mb = n
	}
	if _, err := writeBenchLog(path, mb<<20); err != nil {
		t.Fatal(err)
	}
}

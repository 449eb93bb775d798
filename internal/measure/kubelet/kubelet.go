// Package kubelet is the node sweep's read-only half (issue 15 part 2): every real node's kubelet settings
// (/configz) and its own latency metrics (/metrics), read through the apiserver's node proxy, so nothing runs
// on the nodes and only read RBAC on nodes/proxy is needed.
package kubelet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeslow/kubeslow/internal/kube"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "nodes.kubelet"

// Concurrency bounds the proxy calls in flight (each goes apiserver -> kubelet).
const Concurrency = 8

// Measurement reads every real node's kubelet through the node proxy.
type Measurement struct{}

// New returns the measurement.
func New() *Measurement { return &Measurement{} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Permissions implements measure.Permissioned.
func (*Measurement) Permissions() []measure.Permission {
	return []measure.Permission{
		{Verbs: []string{"list"}, Resource: "nodes", Reason: "the real nodes whose kubelets are read"},
		{Verbs: []string{"get"}, Resource: "nodes/proxy", Reason: "each kubelet's /configz and /metrics through the apiserver's node proxy"},
	}
}

// Description implements measure.Measurement.
func (*Measurement) Description() string {
	return "kubelet settings (/configz: image pulls, maxPods, API QPS, runtime time-out) and latency metrics (pod start SLI, runtime operations, PLEG) through the node proxy"
}

// Config is the part of the kubelet's configuration (KubeletConfiguration, as /configz returns it) the
// rules read. Pointers are nil when the kubelet did not say.
type Config struct {
	SerializeImagePulls   *bool  `json:"serializeImagePulls"`
	MaxParallelImagePulls *int32 `json:"maxParallelImagePulls"`
	RuntimeRequestTimeout string `json:"runtimeRequestTimeout"`
	MaxPods               int32  `json:"maxPods"`
	KubeAPIQPS            *int32 `json:"kubeAPIQPS"`
	KubeAPIBurst          int32  `json:"kubeAPIBurst"`
}

// ParseConfigz parses /configz's {"kubeletconfig": {...}}.
func ParseConfigz(b []byte) (*Config, error) {
	var z struct {
		KubeletConfig *Config `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(b, &z); err != nil {
		return nil, fmt.Errorf("configz: %w", err)
	}
	if z.KubeletConfig == nil {
		return nil, fmt.Errorf("configz: no kubeletconfig")
	}
	return z.KubeletConfig, nil
}

// Node is what one node's kubelet showed.
type Node struct {
	Name string
	CPUs float64
	// LargestImage is the largest image the node holds (its status lists them) and its size.
	LargestImage      string
	LargestImageBytes int64
	Config            *Config
	Metrics           *prom.Snapshot
	// Err says why the kubelet could not be read.
	Err string
}

// Run lists the nodes (paginated) and reads each real node's /configz and /metrics, Concurrency at a time.
func (*Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	res := result.Result{Name: Name}
	all, err := env.ListNodes(ctx)
	if err != nil {
		return res, err
	}
	var nodes []corev1.Node
	for i := range all {
		if !kube.IsSimulated(&all[i]) {
			nodes = append(nodes, all[i])
		}
	}
	if len(nodes) == 0 {
		return res, measure.Skipf("no real node (simulated nodes have no kubelet)")
	}
	out := make([]Node, len(nodes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, Concurrency)
	var forbidden error
	var mu sync.Mutex
	for i := range nodes {
		n := &nodes[i]
		out[i] = nodeFacts(n)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			get := func(path string) ([]byte, error) {
				cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				return env.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", path).DoRaw(cctx)
			}
			b, err := get("configz")
			if err == nil {
				out[i].Config, err = ParseConfigz(b)
			}
			if err == nil {
				if b, err = get("metrics"); err == nil {
					out[i].Metrics, err = prom.Parse(bytes.NewReader(b), time.Now())
				}
			}
			if err != nil {
				out[i].Err = err.Error()
				if apierrors.IsForbidden(err) {
					mu.Lock()
					forbidden = err
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if forbidden != nil {
		return res, measure.Skipf("no permission to read the kubelets through the node proxy (nodes/proxy get): %v", forbidden)
	}
	return Analyze(out), nil
}

func nodeFacts(n *corev1.Node) Node {
	out := Node{Name: n.Name, CPUs: float64(n.Status.Capacity.Cpu().MilliValue()) / 1000}
	for _, img := range n.Status.Images {
		if img.SizeBytes > out.LargestImageBytes && len(img.Names) > 0 {
			out.LargestImage, out.LargestImageBytes = img.Names[len(img.Names)-1], img.SizeBytes
		}
	}
	return out
}

// Metric names of the result (label node): rules read them through these.
const (
	MetricSerializePulls   = "serialize_image_pulls"
	MetricLargestImage     = "largest_image_bytes"
	MetricMaxPodsPerCPU    = "max_pods_per_cpu"
	MetricKubeAPIQPS       = "kube_api_qps"
	MetricRuntimeTimeout   = "runtime_request_timeout"
	MetricPodStartP99      = "pod_start_sli_p99"
	MetricPodStartVsMedian = "pod_start_sli_p99_vs_median"
	MetricRuntimeOpP99     = "runtime_operations_p99"
	MetricRuntimeOpErrors  = "runtime_operations_errors"
	MetricPLEGRelistP99    = "pleg_relist_p99"
	MetricImagePullP99     = "image_pull_p99"
	MetricNodesRead        = "nodes_read"
	MetricNodesUnreadable  = "nodes_unreadable"
)

// histP99 merges every series of a histogram family and returns its p99.
func histP99(s *prom.Snapshot, family string) (float64, bool) {
	var h *prom.Histogram
	for _, se := range s.Series(family) {
		if se.Hist == nil {
			continue
		}
		if h == nil {
			c := *se.Hist
			c.Counts = append([]float64(nil), se.Hist.Counts...)
			h = &c
			continue
		}
		h.Add(se.Hist)
	}
	return h.Quantile(0.99)
}

// Analyze turns the nodes' kubelet readings into the result (pure).
func Analyze(nodes []Node) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	add := func(name, unit string, v float64, node string) {
		l := map[string]string{}
		if node != "" {
			l["node"] = node
		}
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	read, unreadable := 0, 0
	starts := map[string]float64{}
	for _, n := range nodes {
		rec := result.Record{ID: "kubelet " + n.Name, Labels: map[string]string{}}
		if n.Err != "" {
			unreadable++
			rec.Labels["error"] = n.Err
			res.Records = append(res.Records, rec)
			continue
		}
		read++
		c := n.Config
		serial := c.SerializeImagePulls == nil || *c.SerializeImagePulls // the kubelet's default is true
		add(MetricSerializePulls, "bool", b2f(serial), n.Name)
		rec.Labels["serializeImagePulls"] = fmt.Sprint(serial)
		if c.MaxParallelImagePulls != nil {
			rec.Labels["maxParallelImagePulls"] = fmt.Sprint(*c.MaxParallelImagePulls)
		}
		add(MetricLargestImage, "bytes", float64(n.LargestImageBytes), n.Name)
		if n.LargestImage != "" {
			rec.Labels["largest_image"] = n.LargestImage
		}
		if n.CPUs > 0 && c.MaxPods > 0 {
			add(MetricMaxPodsPerCPU, "ratio", float64(c.MaxPods)/n.CPUs, n.Name)
		}
		rec.Labels["maxPods"] = fmt.Sprint(c.MaxPods)
		if c.KubeAPIQPS != nil {
			add(MetricKubeAPIQPS, "per_second", float64(*c.KubeAPIQPS), n.Name)
		}
		if d, err := time.ParseDuration(c.RuntimeRequestTimeout); err == nil {
			add(MetricRuntimeTimeout, "seconds", d.Seconds(), n.Name)
		}
		if s := n.Metrics; s != nil {
			if v, ok := histP99(s, "kubelet_pod_start_sli_duration_seconds"); ok {
				add(MetricPodStartP99, "seconds", v, n.Name)
				starts[n.Name] = v
			}
			if v, ok := histP99(s, "kubelet_runtime_operations_duration_seconds"); ok {
				add(MetricRuntimeOpP99, "seconds", v, n.Name)
			}
			if v, ok := histP99(s, "kubelet_pleg_relist_duration_seconds"); ok {
				add(MetricPLEGRelistP99, "seconds", v, n.Name)
			}
			if v, ok := histP99(s, "kubelet_image_pull_duration_seconds"); ok {
				add(MetricImagePullP99, "seconds", v, n.Name)
			}
			errs := 0.0
			for _, se := range s.Series("kubelet_runtime_operations_errors_total") {
				errs += se.Value
			}
			add(MetricRuntimeOpErrors, "count", errs, n.Name)
		}
		res.Records = append(res.Records, rec)
	}
	// A node whose pod-start SLI stands out from the others: its p99 over the median of every node's.
	if len(starts) >= 3 {
		var v []float64
		for _, s := range starts {
			v = append(v, s)
		}
		sort.Float64s(v)
		med := v[len(v)/2]
		if len(v)%2 == 0 {
			med = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		names := make([]string, 0, len(starts))
		for n := range starts {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if med > 0 {
				add(MetricPodStartVsMedian, "ratio", starts[n]/med, n)
			}
		}
	}
	add(MetricNodesRead, "count", float64(read), "")
	add(MetricNodesUnreadable, "count", float64(unreadable), "")
	if unreadable > 0 {
		res.Reason = fmt.Sprintf("%d of %d kubelets could not be read", unreadable, len(nodes))
		if read == 0 {
			res.Status = result.StatusError
		}
	}
	return res
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

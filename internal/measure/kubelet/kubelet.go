// Package kubelet is the node sweep's read-only half (issue 15 part 2): every real node's kubelet settings
// (/configz) and its own latency metrics (/metrics), read through the apiserver's node proxy, so nothing runs
// on the nodes and only read RBAC on nodes/proxy is needed.
package kubelet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/source/prom"
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
	nodes, err := env.KubeletNodes(ctx)
	if err != nil {
		return res, err
	}
	if len(nodes) == 0 {
		return res, measure.Skipf("no real node (simulated nodes have no kubelet)")
	}
	out, forbidden := ReadKubelets(ctx, env.Client, nodes)
	if forbidden != nil {
		return res, measure.Skipf("no permission to read the kubelets through the node proxy (nodes/proxy get): %v", forbidden)
	}
	pulls, err := ListPulls(ctx, env.Client)
	return Analyze(out, pulls, err), nil
}

// ReadKubelets reads each node's /configz and /metrics through the node proxy, Concurrency at a time;
// forbidden is the last Forbidden answer (RBAC refuses nodes/proxy), nil when none.
func ReadKubelets(ctx context.Context, c kubernetes.Interface, nodes []corev1.Node) (out []Node, forbidden error) {
	out = make([]Node, len(nodes))
	var g errgroup.Group
	g.SetLimit(Concurrency)
	var mu sync.Mutex
	for i := range nodes {
		n := &nodes[i]
		out[i] = nodeFacts(n)
		g.Go(func() error {
			b, err := kube.NodeProxyGet(ctx, c, n.Name, "configz")
			if err == nil {
				out[i].Config, err = ParseConfigz(b)
			}
			if err == nil {
				if b, err = kube.NodeProxyGet(ctx, c, n.Name, "metrics"); err == nil {
					if out[i].Metrics, err = prom.Parse(bytes.NewReader(b), time.Now()); err == nil {
						out[i].Metrics.Keep(families...)
					}
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
			return nil
		})
	}
	_ = g.Wait()
	return out, forbidden
}

// families are the /metrics families Analyze reads.
var families = []string{"kubelet_pod_start_sli_duration_seconds", "kubelet_runtime_operations_duration_seconds",
	"kubelet_pleg_relist_duration_seconds", "kubelet_image_pull_duration_seconds", "kubelet_runtime_operations_errors_total"}

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
	// MetricRuntimeOpP99 is the p99 of every runtime operation but image pulls (which have their own).
	MetricRuntimeOpP99      = "runtime_operations_p99"
	MetricRuntimeOpVsMedian = "runtime_operations_p99_vs_median"
	MetricRuntimeOpErrors   = "runtime_operations_errors"
	MetricPLEGRelistP99     = "pleg_relist_p99"
	MetricImagePullP99      = "image_pull_p99"
	// MetricPullWait is, per node, the longest time a pull waited for the kubelet's puller (labels: the image,
	// the pod, the pull that held the puller, the node's pull setting); MetricPulls and MetricPullMax count the
	// node's pulls and their longest own time.
	MetricPullWait        = "image_pull_wait_max"
	MetricPulls           = "image_pulls"
	MetricPullMax         = "image_pull_max"
	MetricNodesRead       = "nodes_read"
	MetricNodesUnreadable = "nodes_unreadable"
)

// histP99 merges every series of a histogram family (but those of the operation types left out) and returns
// its p99, estimated within a bucket.
func histP99(s *prom.Snapshot, family string, without ...string) (prom.Estimate, bool) {
	var h *prom.Histogram
	for _, se := range s.Series(family) {
		if se.Hist == nil || slices.Contains(without, se.Labels["operation_type"]) {
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
	return h.QuantileEstimate(0.99)
}

// Analyze turns the nodes' kubelet readings and the pulls their events reported (pullsErr: why they could
// not be listed) into the result (pure).
func Analyze(nodes []Node, pulls []Pull, pullsErr error) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	add := func(name, unit string, v float64, node string) {
		l := map[string]string{}
		if node != "" {
			l["node"] = node
		}
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	addEstimate := func(name string, e prom.Estimate, node string) float64 {
		res.Metrics = append(res.Metrics, e.Metric(name, "seconds", map[string]string{"node": node}))
		return e.Value
	}
	read, unreadable := 0, 0
	starts, runtimes := map[string]float64{}, map[string]float64{}
	queued := LongestWaits(pulls)
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
			if e, ok := histP99(s, "kubelet_pod_start_sli_duration_seconds"); ok {
				starts[n.Name] = addEstimate(MetricPodStartP99, e, n.Name)
			}
			if e, ok := histP99(s, "kubelet_runtime_operations_duration_seconds", "pull_image"); ok {
				runtimes[n.Name] = addEstimate(MetricRuntimeOpP99, e, n.Name)
			}
			if e, ok := histP99(s, "kubelet_pleg_relist_duration_seconds"); ok {
				addEstimate(MetricPLEGRelistP99, e, n.Name)
			}
			if e, ok := histP99(s, "kubelet_image_pull_duration_seconds"); ok {
				addEstimate(MetricImagePullP99, e, n.Name)
			}
			errs := 0.0
			for _, se := range s.Series("kubelet_runtime_operations_errors_total") {
				errs += se.Value
			}
			add(MetricRuntimeOpErrors, "count", errs, n.Name)
		}
		if pullsErr == nil {
			q := queued[n.Name]
			l := map[string]string{"node": n.Name, "setting": pullSetting(c)}
			if q.Pulls > 0 {
				w := q.Waited
				l["image"], l["pod"] = w.Image, w.Namespace+"/"+w.Pod
				l["pull"] = w.Pull.String()
				l["behind"] = "a pull whose event is gone (expired, or the pull failed)"
				if b := q.Blocker; b.Image != "" {
					l["behind"] = fmt.Sprintf("%s (%.0f MiB, pulled in %s)", b.Image, float64(b.Bytes)/(1<<20), b.Pull)
				}
				add(MetricPullMax, "seconds", q.Longest.Seconds(), n.Name)
				rec.Labels["longest_wait"] = fmt.Sprintf("%s for %s (pulled in %s) behind %s", w.Wait(), w.Image, w.Pull, l["behind"])
			}
			res.Metrics = append(res.Metrics, result.Metric{Name: MetricPullWait, Unit: "seconds", Value: q.Waited.Wait().Seconds(), Labels: l})
			add(MetricPulls, "count", float64(q.Pulls), n.Name)
		}
		res.Records = append(res.Records, rec)
	}
	// A node whose pod-start SLI or runtime latency stands out from the others: its p99 over the median of
	// every node's.
	for _, o := range []struct {
		name string
		v    map[string]float64
	}{{MetricPodStartVsMedian, starts}, {MetricRuntimeOpVsMedian, runtimes}} {
		med := median(o.v)
		if len(o.v) < 3 || med <= 0 {
			continue
		}
		for _, n := range slices.Sorted(maps.Keys(o.v)) {
			add(o.name, "ratio", o.v[n]/med, n)
		}
	}
	if pullsErr != nil {
		res.Absent = append(res.Absent, result.Absence{Metric: MetricPullWait, Series: "Pulled events", Reason: pullsErr.Error()})
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

// median of m's values.
func median(m map[string]float64) float64 {
	v := make([]float64, 0, len(m))
	for _, x := range m {
		v = append(v, x)
	}
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

package promwindow

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Kubelet is nodes.kubelet from Prometheus: each kubelet's pod start-up SLI, runtime operation, PLEG relist
// and image-pull histograms and runtime operation errors over the window (increase() by instance), analysed by
// kubelet.Analyze as the live measurement analyses its /metrics reads, so the kubelet rules read it on their
// thresholds. The kubelet's configuration (/configz) and the nodes' image sizes are not metrics: they are
// listed as absent, so the rules reading them are not evaluated.
type Kubelet struct{ src *Source }

// NewKubelet returns the measurement.
func NewKubelet(s *Source) *Kubelet { return &Kubelet{src: s} }

// Name implements measure.Measurement: the live measurement's name, so the same rules read it.
func (*Kubelet) Name() string { return kubelet.Name }

// Description implements measure.Measurement.
func (k *Kubelet) Description() string {
	return fmt.Sprintf("kubelet pod start-up SLI, runtime operations, PLEG, image pulls per kubelet, from Prometheus over %s", k.src.Window)
}

// kubeletHistograms are the histograms kubelet.Analyze reads.
var kubeletHistograms = []string{"kubelet_pod_start_sli_duration_seconds", "kubelet_runtime_operations_duration_seconds",
	"kubelet_pleg_relist_duration_seconds", "kubelet_image_pull_duration_seconds"}

// configMetrics are the live result's metrics that come from /configz or the node's status, not from metrics.
var configMetrics = map[string]bool{kubelet.MetricSerializePulls: true, kubelet.MetricLargestImage: true, kubelet.MetricMaxPodsPerCPU: true,
	kubelet.MetricKubeAPIQPS: true, kubelet.MetricRuntimeTimeout: true}

// Run implements measure.Measurement.
func (k *Kubelet) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	s := k.src
	if err := s.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	job, ok := s.Selector("kubelet")
	if !ok {
		return result.Result{}, measure.Skipf("%s", s.absentReason("kubelet"))
	}
	shards, err := s.kubeletShards(ctx, job)
	if err != nil {
		return result.Result{}, err
	}
	fams := map[string]*dto.MetricFamily{}
	for _, h := range kubeletHistograms {
		// kubelet.Analyze leaves the pulls out of the runtime's p99: so does the query, which keeps one
		// histogram per kubelet (by operation type it would be ~15 times the series).
		extra := ""
		if h == "kubelet_runtime_operations_duration_seconds" {
			extra = `operation_type!="pull_image"`
		}
		for _, sh := range shards.of(h) {
			part := map[string]*dto.MetricFamily{}
			if err := s.histogram(ctx, part, h, job, []string{"instance"}, false, extra, sh); err != nil {
				return result.Result{}, err
			}
			mergeFamily(fams, part, h)
		}
	}
	for _, sh := range shards.of("kubelet_runtime_operations_errors_total") {
		part := map[string]*dto.MetricFamily{}
		if err := s.counter(ctx, part, "kubelet_runtime_operations_errors_total", job, []string{"instance"}, sh); err != nil {
			return result.Result{}, err
		}
		mergeFamily(fams, part, "kubelet_runtime_operations_errors_total")
	}
	// One snapshot per kubelet (instance), as the live measurement reads one /metrics per node.
	perNode := splitBy(fams, "instance")
	insts := make([]string, 0, len(perNode))
	for inst := range perNode {
		insts = append(insts, inst)
	}
	sort.Strings(insts)
	var nodes []kubelet.Node
	for _, inst := range insts {
		nodes = append(nodes, kubelet.Node{Name: inst, Config: &kubelet.Config{}, Metrics: &prom.Snapshot{At: s.Window.To, Families: perNode[inst]}})
	}
	if len(nodes) == 0 {
		return result.Result{}, measure.Skipf("job %s exposed none of %v in %s", jobValue(job), kubeletHistograms, s.Window)
	}
	res := kubelet.Analyze(nodes, nil, errors.New("the kubelets' Pulled events are not metrics; read them live (nodes.kubelet)"))
	kept := res.Metrics[:0]
	for _, m := range res.Metrics {
		if !configMetrics[m.Name] {
			kept = append(kept, m)
		}
	}
	res.Metrics = kept
	for i := range res.Records {
		delete(res.Records[i].Labels, "serializeImagePulls")
		delete(res.Records[i].Labels, "maxPods")
	}
	res.Start, res.End = s.Window.From, s.Window.To
	res.Absent = append(res.Absent,
		result.Absence{Metric: kubelet.MetricSerializePulls, Series: "(kubelet /configz serializeImagePulls)", Reason: "the kubelet's configuration is not a metric; read it live (nodes.kubelet)"},
		result.Absence{Metric: kubelet.MetricLargestImage, Series: "(node status images)", Reason: "image sizes in the nodes' status are not metrics"})
	for _, a := range []struct{ family, metric string }{
		{"kubelet_pod_start_sli_duration_seconds", kubelet.MetricPodStartP99}, {"kubelet_pod_start_sli_duration_seconds", kubelet.MetricPodStartVsMedian},
		{"kubelet_runtime_operations_duration_seconds", kubelet.MetricRuntimeOpP99}, {"kubelet_image_pull_duration_seconds", kubelet.MetricImagePullP99},
	} {
		if fams[a.family] == nil {
			res.Absent = append(res.Absent, result.Absence{Metric: a.metric, Series: a.family + "_bucket",
				Reason: fmt.Sprintf("job %s has no %s in the window (or nothing happened to measure)", jobValue(job), a.family)})
		}
	}
	s.label(&res, "job "+jobValue(job), map[string]string{
		kubelet.MetricPodStartP99: "kubelet_pod_start_sli_duration_seconds", kubelet.MetricPodStartVsMedian: "kubelet_pod_start_sli_duration_seconds",
		kubelet.MetricRuntimeOpP99: "kubelet_runtime_operations_duration_seconds", kubelet.MetricRuntimeOpErrors: "kubelet_runtime_operations_errors_total",
		kubelet.MetricPLEGRelistP99: "kubelet_pleg_relist_duration_seconds", kubelet.MetricImagePullP99: "kubelet_image_pull_duration_seconds"})
	if err := s.addProfile(ctx, &res, profile{Result: kubelet.Name, Metric: kubelet.MetricPodStartP99, Unit: "seconds", Op: ">", Threshold: podstartup.DefaultSLO.Seconds(),
		What:  "kubelet pod start-up SLI p99",
		Query: fmt.Sprintf("histogram_quantile(0.99, sum by (le) (rate(%s[%s])))", selector("kubelet_pod_start_sli_duration_seconds_bucket", job), s.rate())}); err != nil {
		return res, err
	}
	return res, nil
}

// Sharding nodes.kubelet: each histogram is read by (instance, le), one series per kubelet and bucket, and an
// answer holds at most the client's MaxSeries (2,000) series. Up to kubeletShardBuckets buckets, a cluster of
// up to MaxSeries / kubeletShardBuckets kubelets (discovery counted them) is read in one query per family, as
// before; a larger one is split into batches of kubelets (instance=~"a|b|..."), each batch as large as the
// family's own bucket count allows. The batches beyond the one query per family are granted to the run's
// query budget.
const (
	// kubeletShardBuckets is the bucket count assumed before counting them (the pod start-up SLI has 26).
	kubeletShardBuckets = 40
	// MaxKubelets bounds the kubelets one run reads (Kubernetes' largest supported cluster: 5,000 nodes).
	MaxKubelets = 5000
)

// shards are the instance matchers each family is read with ("" : one query for all).
type shards struct {
	instances []string
	buckets   map[string]int
	maxSeries int
}

// of returns the matchers of family's queries.
func (sh shards) of(family string) []string {
	if len(sh.instances) == 0 {
		return []string{""}
	}
	per := sh.maxSeries // a counter by instance: one series per kubelet
	if b, ok := sh.buckets[family]; ok {
		per = max(1, sh.maxSeries/b)
	} else if family != "kubelet_runtime_operations_errors_total" {
		per = max(1, sh.maxSeries/kubeletShardBuckets)
	}
	var out []string
	for i := 0; i < len(sh.instances); i += per {
		batch := sh.instances[i:min(i+per, len(sh.instances))]
		q := make([]string, len(batch))
		for j, in := range batch {
			q[j] = regexp.QuoteMeta(in)
		}
		out = append(out, fmt.Sprintf("instance=~%q", strings.Join(q, "|")))
	}
	return out
}

// count is how many queries the families take.
func (sh shards) count() int {
	n := 0
	for _, f := range append(append([]string(nil), kubeletHistograms...), "kubelet_runtime_operations_errors_total") {
		n += len(sh.of(f))
	}
	return n
}

// kubeletShards splits the kubelets into batches when the cluster is too large for one answer per family: the
// kubelets (instances) and each histogram's bucket count are read first (two queries).
func (s *Source) kubeletShards(ctx context.Context, job string) (shards, error) {
	sh := shards{maxSeries: s.Client.MaxSeries()}
	if t := s.Target("kubelet"); t == nil || t.Series*kubeletShardBuckets <= sh.maxSeries {
		return sh, nil
	}
	insts, err := s.Client.LabelValuesUpTo(ctx, "instance", selector("kubelet_node_name", job), s.Window.From, s.Window.To, MaxKubelets)
	if err != nil {
		return sh, err
	}
	names := make([]string, len(kubeletHistograms))
	for i, h := range kubeletHistograms {
		names[i] = h + "_bucket"
	}
	v, err := s.Client.Instant(ctx, fmt.Sprintf(`count by (__name__) (group by (__name__, le) ({__name__=~%q,%s}))`, strings.Join(names, "|"), job), s.Window.To)
	if err != nil {
		return sh, err
	}
	sh.buckets = map[string]int{}
	for _, smp := range v {
		sh.buckets[strings.TrimSuffix(string(smp.Metric[model.MetricNameLabel]), "_bucket")] = int(smp.Value)
	}
	sort.Strings(insts)
	sh.instances = insts
	s.Client.Grant(sh.count() - len(kubeletHistograms) - 1)
	return sh, nil
}

// mergeFamily adds part's family (one batch of kubelets) to fams.
func mergeFamily(fams, part map[string]*dto.MetricFamily, family string) {
	f := part[family]
	if f == nil {
		return
	}
	if fams[family] == nil {
		fams[family] = f
		return
	}
	fams[family].Metric = append(fams[family].Metric, f.Metric...)
}

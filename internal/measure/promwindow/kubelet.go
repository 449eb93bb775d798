package promwindow

import (
	"context"
	"errors"
	"fmt"
	"sort"

	dto "github.com/prometheus/client_model/go"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/prom"
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
	fams := map[string]*dto.MetricFamily{}
	for _, h := range kubeletHistograms {
		// kubelet.Analyze leaves the pulls out of the runtime's p99: so does the query, which keeps one
		// histogram per kubelet (by operation type it would be ~15 times the series).
		extra := ""
		if h == "kubelet_runtime_operations_duration_seconds" {
			extra = `operation_type!="pull_image"`
		}
		if err := s.histogram(ctx, fams, h, job, []string{"instance"}, false, extra); err != nil {
			return result.Result{}, err
		}
	}
	if err := s.counter(ctx, fams, "kubelet_runtime_operations_errors_total", job, []string{"instance"}); err != nil {
		return result.Result{}, err
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

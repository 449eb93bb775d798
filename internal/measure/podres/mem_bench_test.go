package podres

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeslow/kubeslow/internal/measure"
)

// BenchmarkListPods30k: the memory pods.resources keeps for one end of its window on a cluster of 30,000 pods
// (issue 32's scale; the lab's pods as recorded, managed fields and conditions included), slim as ListPods
// keeps them against the full objects it kept before. retained-MiB is the live heap the list holds after a GC.
//
//	go test -run '^$' -bench ListPods30k -benchtime 3x ./internal/measure/podres/
func BenchmarkListPods30k(b *testing.B) {
	in, err := Load(filepath.Join("testdata", "recorded-faults"))
	if err != nil {
		b.Fatal(err)
	}
	objs := make([]apiruntime.Object, 0, 30000)
	for i := range 30000 {
		p := in.PodsEnd[i%len(in.PodsEnd)].DeepCopy()
		p.Name, p.UID = fmt.Sprintf("%s-%05d", p.Name, i), types.UID(fmt.Sprintf("uid-%05d", i))
		objs = append(objs, p)
	}
	env := &measure.Env{Client: fake.NewClientset(objs...)}
	for _, c := range []struct {
		name string
		list func(context.Context) ([]corev1.Pod, error)
	}{{"slim", func(ctx context.Context) ([]corev1.Pod, error) { return ListPods(ctx, env) }},
		// what ListPods kept before: every object whole
		{"full", func(ctx context.Context) ([]corev1.Pod, error) {
			return listPods(ctx, env, func(p *corev1.Pod) corev1.Pod { return *p })
		}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				pods, err := c.list(context.Background())
				if err != nil || len(pods) != 30000 {
					b.Fatalf("%d pods: %v", len(pods), err)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/(1<<20), "retained-MiB")
				runtime.KeepAlive(pods)
			}
		})
	}
}

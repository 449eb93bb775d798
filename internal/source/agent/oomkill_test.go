package agent

import (
	"strings"
	"testing"
	"time"
)

// Kernel lines as Linux 6.x logs them (cgroupfs and systemd drivers), and a pre-4.19 global kill.
const oomLog = `[ 100.000001] stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=939
[ 100.000002] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=4f1c,mems_allowed=0,oom_memcg=/kubepods/burstable/pod0a1b2c3d-1111-2222-3333-444455556666,task_memcg=/kubepods/burstable/pod0a1b2c3d-1111-2222-3333-444455556666/4f1c0000000000000000000000000000000000000000000000000000000000aa,task=stress,pid=4242,uid=0
[ 100.000003] Memory cgroup out of memory: Killed process 4242 (stress) total-vm:9321000kB, anon-rss:2048000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4500kB oom_score_adj:939
[ 200.000001] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9f8e7d6c_aaaa_bbbb_cccc_ddddeeeeffff.slice/cri-containerd-bb00000000000000000000000000000000000000000000000000000000000000.scope,task=java,pid=77,uid=0
[ 200.000002] Out of memory: Killed process 77 (java) total-vm:1kB
[ 300.000001] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=x,mems_allowed=0,oom_memcg=/pods-lab-node-1/kubepods,task_memcg=/pods-lab-node-1/kubepods/besteffort/pod0a1b2c3d-9999-2222-3333-444455556666,task=kubeslow,pid=88,uid=0
[ 300.000002] Memory cgroup out of memory: Killed process 88 (kubeslow) total-vm:1kB
[ 400.000001] Out of memory: Killed process 99 (old) total-vm:1kB
`

func TestOOMKills(t *testing.T) {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(oomLog), "\n") {
		lines = append(lines, "Nov 23 17:06:30 node-1 kernel: "+l)
	}
	k, err := ScanKernelLogFile(strings.NewReader(strings.Join(lines, "\n")), "kern.log", 500*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if k.Counts[KernOOMKill] != 4 {
		t.Errorf("%d kill lines, want 4", k.Counts[KernOOMKill])
	}
	want := []struct {
		uid, cid, task, scope string
		pid                   int
		ago                   float64
	}{
		{"0a1b2c3d-1111-2222-3333-444455556666", "4f1c0000000000000000000000000000000000000000000000000000000000aa", "stress", OOMScopeContainer, 4242, 400},
		{"9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff", "bb00000000000000000000000000000000000000000000000000000000000000", "java", OOMScopeNode, 77, 300},
		{"0a1b2c3d-9999-2222-3333-444455556666", "", "kubeslow", OOMScopeNode, 88, 200},
		{"", "", "old", OOMScopeNode, 99, 100},
	}
	if len(k.OOMKills) != len(want) {
		t.Fatalf("kills %+v", k.OOMKills)
	}
	for i, w := range want {
		g := k.OOMKills[i]
		if g.PodUID != w.uid || g.ContainerID != w.cid || g.Task != w.task || g.Scope() != w.scope || g.PID != w.pid || int(g.AgoSeconds+0.5) != int(w.ago) {
			t.Errorf("kill %d: %+v (scope %s), want %+v", i, g, g.Scope(), w)
		}
	}
}

func TestOOMKillsKept(t *testing.T) {
	var k KernelLog
	for i := 0; i < MaxOOMKills+10; i++ {
		k.add("oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/a,task_memcg=/a,task=x,pid=1", time.Duration(i))
	}
	if len(k.OOMKills) != MaxOOMKills || k.OOMKills[MaxOOMKills-1].AgoSeconds != time.Duration(MaxOOMKills+9).Seconds() {
		t.Fatalf("%d kills kept, newest %+v", len(k.OOMKills), k.OOMKills[len(k.OOMKills)-1])
	}
	if k.OOMKills[0].Scope() != OOMScopeContainer {
		t.Errorf("a memory cgroup's own limit outside Kubernetes: scope %s", k.OOMKills[0].Scope())
	}
}

func FuzzParseOOMKillLine(f *testing.F) {
	for _, l := range strings.Split(oomLog, "\n") {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, ok := ParseOOMKillLine(s)
		if !ok {
			return
		}
		if k.PodUID != "" && (len(k.PodUID) != 36 || strings.Contains(k.PodUID, "_")) {
			t.Fatalf("pod UID %q from %q", k.PodUID, s)
		}
		if k.ContainerID != "" && len(k.ContainerID) != 64 {
			t.Fatalf("container ID %q from %q", k.ContainerID, s)
		}
		_ = k.Scope()
	})
}

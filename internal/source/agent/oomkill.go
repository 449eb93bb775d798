package agent

import (
	"regexp"
	"strconv"
	"strings"
)

// OOM kill scopes: whose limit the kernel enforced when it killed.
const (
	// OOMScopeContainer: a memory cgroup's own limit — the killed task's pod or container cgroup is the one
	// that ran out ("Memory cgroup out of memory", oom_memcg = the pod's or container's cgroup).
	OOMScopeContainer = "container"
	// OOMScopeNode: the node ran out ("Out of memory: Killed process", constraint CONSTRAINT_NONE, oom_memcg=/),
	// or an ancestor of the pod's cgroup did (kubepods, limited to the node's allocatable memory).
	OOMScopeNode = "node"
)

// OOMKill is one kill by the kernel's OOM killer, from its "oom-kill:" summary line (Linux 4.19+) and the
// "Killed process" line after it.
type OOMKill struct {
	// AgoSeconds is how long before the read it was logged (-1: unknown).
	AgoSeconds float64 `json:"ago_seconds"`
	// Constraint is the kernel's CONSTRAINT_* (NONE: node-wide, MEMCG: a memory cgroup's limit).
	Constraint string `json:"constraint,omitempty"`
	// OOMMemcg is the cgroup that ran out of memory, TaskMemcg the killed task's cgroup.
	OOMMemcg  string `json:"oom_memcg,omitempty"`
	TaskMemcg string `json:"task_memcg,omitempty"`
	Task      string `json:"task,omitempty"`
	PID       int    `json:"pid,omitempty"`
	// Killed is the "Killed process" line's kind: "memcg" ("Memory cgroup out of memory") or "global" ("Out
	// of memory"); empty when that line was not seen.
	Killed string `json:"killed,omitempty"`
	// PodUID and ContainerID are read from TaskMemcg (empty when it names no pod or container).
	PodUID      string `json:"pod_uid,omitempty"`
	ContainerID string `json:"container_id,omitempty"`
}

// Scope says whose limit was enforced (OOMScopeContainer or OOMScopeNode).
func (k OOMKill) Scope() string {
	if k.Killed == "global" || k.Constraint == "CONSTRAINT_NONE" || k.OOMMemcg == "/" {
		return OOMScopeNode
	}
	if k.PodUID != "" && PodUIDOfCgroup(k.OOMMemcg) == k.PodUID {
		return OOMScopeContainer
	}
	if k.Constraint == "CONSTRAINT_MEMCG" && k.PodUID == "" && k.OOMMemcg != "" && k.OOMMemcg == k.TaskMemcg {
		return OOMScopeContainer // a memory cgroup of its own, outside Kubernetes
	}
	return OOMScopeNode
}

// MaxOOMKills is how many kills a kernel log record keeps (the newest).
const MaxOOMKills = 64

var (
	podUIDRe      = regexp.MustCompile(`pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12})`)
	containerIDRe = regexp.MustCompile(`(?:^|[/-])([0-9a-f]{64})(?:\.scope)?$`)
	killedRe      = regexp.MustCompile(`(Memory cgroup out of memory|Out of memory): Killed process (\d+) \(([^)]*)\)`)
)

// PodUIDOfCgroup is the pod UID a cgroup path names (cgroupfs: /kubepods/burstable/pod<uid>/<id>; systemd:
// kubepods-burstable-pod<uid with _>.slice), with dashes; "" when it names none.
func PodUIDOfCgroup(p string) string {
	m := podUIDRe.FindStringSubmatch(p)
	if m == nil {
		return ""
	}
	return strings.ToLower(strings.ReplaceAll(m[1], "_", "-"))
}

// ContainerIDOfCgroup is the container ID a cgroup path ends with (…/<id>, cri-containerd-<id>.scope,
// docker-<id>.scope); "" when it ends with none.
func ContainerIDOfCgroup(p string) string {
	if m := containerIDRe.FindStringSubmatch(p); m != nil {
		return m[1]
	}
	return ""
}

// ParseOOMKillLine parses the kernel's "oom-kill:constraint=…,oom_memcg=…,task_memcg=…,task=…,pid=…" line.
func ParseOOMKillLine(msg string) (OOMKill, bool) {
	i := strings.Index(msg, "oom-kill:")
	if i < 0 {
		return OOMKill{}, false
	}
	k := OOMKill{AgoSeconds: -1}
	for _, kv := range strings.Split(msg[i+len("oom-kill:"):], ",") {
		key, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		switch key {
		case "constraint":
			k.Constraint = v
		case "oom_memcg":
			k.OOMMemcg = v
		case "task_memcg":
			k.TaskMemcg = v
		case "task":
			k.Task = v
		case "pid":
			k.PID, _ = strconv.Atoi(v)
		}
	}
	if k.Constraint == "" && k.TaskMemcg == "" {
		return OOMKill{}, false
	}
	k.PodUID, k.ContainerID = PodUIDOfCgroup(k.TaskMemcg), ContainerIDOfCgroup(k.TaskMemcg)
	return k, true
}

// addOOM folds one kernel line into the log's kills: an "oom-kill:" line starts a kill, the "Killed
// process" line after it says which kind; a "Killed process" line with no summary before it (kernels before
// 4.19) is a kill of its own.
func (k *KernelLog) addOOM(msg string, agoSeconds float64) {
	if o, ok := ParseOOMKillLine(msg); ok {
		o.AgoSeconds = agoSeconds
		k.OOMKills = append(k.OOMKills, o)
	} else if m := killedRe.FindStringSubmatch(msg); m != nil {
		kind := "memcg"
		if m[1] == "Out of memory" {
			kind = "global"
		}
		pid, _ := strconv.Atoi(m[2])
		if n := len(k.OOMKills); n > 0 && k.OOMKills[n-1].Killed == "" && (k.OOMKills[n-1].PID == pid || k.OOMKills[n-1].PID == 0) {
			k.OOMKills[n-1].Killed = kind
		} else {
			k.OOMKills = append(k.OOMKills, OOMKill{AgoSeconds: agoSeconds, Killed: kind, PID: pid, Task: m[3]})
		}
	} else {
		return
	}
	if len(k.OOMKills) > MaxOOMKills {
		k.OOMKills = append(k.OOMKills[:0], k.OOMKills[len(k.OOMKills)-MaxOOMKills:]...)
	}
}

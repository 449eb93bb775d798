package podstartup

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// EventClass is what an Event says slowed a pod: its class (the Event's reason, grouped), the detail that
// tells the remedies of one class apart (FailedScheduling's "Insufficient cpu" from its "untolerated taint"),
// and the start-up phase it holds a pod in.
type EventClass struct {
	Class, Detail, Phase string
}

// String is "Class: Detail" (or the class alone).
func (c EventClass) String() string {
	if c.Detail == "" {
		return c.Class
	}
	return c.Class + ": " + c.Detail
}

// Event classes (the Event reasons k8sgpt and Robusta classify, grouped by what fixes them).
const (
	ClassScheduling = "FailedScheduling"
	ClassSandbox    = "FailedCreatePodSandBox"
	ClassMount      = "FailedMount"
	ClassAttach     = "FailedAttachVolume"
	ClassImagePull  = "ImagePull"
	ClassCrashLoop  = "CrashLoopBackOff"
	ClassUnhealthy  = "Unhealthy"
	ClassEvicted    = "Evicted"
	ClassNodeDown   = "NodeNotReady"
)

// Phase of an event class that holds a pod after its start-up (a probe that fails keeps it from Ready) or at
// any point (its node went away).
const (
	PhaseReady = "ready"
	PhaseAny   = "any"
)

// schedulingReason is one "N <reason>" of the scheduler's FailedScheduling message ("0/3 nodes are available:
// 1 Insufficient cpu, 2 node(s) had untolerated taint {k: v}. preemption: …").
var schedulingReason = regexp.MustCompile(`(\d+) ([^,.]+(?:\{[^}]*\})?[^,.]*)`)

// schedulingDetail names the remedy class of one of the scheduler's reasons.
func schedulingDetail(reason string) string {
	l := strings.ToLower(reason)
	switch {
	case strings.Contains(l, "too many pods"):
		return "Too many pods"
	case strings.Contains(l, "insufficient cpu"):
		return "Insufficient cpu"
	case strings.Contains(l, "insufficient memory"):
		return "Insufficient memory"
	case strings.Contains(l, "insufficient"):
		return "Insufficient resources"
	case strings.Contains(l, "taint"):
		return "untolerated taint"
	case strings.Contains(l, "affinity") || strings.Contains(l, "selector") || strings.Contains(l, "topology spread"):
		return "affinity/selector"
	case strings.Contains(l, "persistentvolumeclaim") || strings.Contains(l, "volume node affinity") || strings.Contains(l, "unbound"):
		return "unbound PVC"
	case strings.Contains(l, "unschedulable"):
		return "unschedulable nodes"
	case strings.Contains(l, "not ready") || strings.Contains(l, "notready"):
		return "nodes not ready"
	}
	return "other"
}

// SchedulingDetail reads the scheduler's FailedScheduling message: the reason that turned away the most
// nodes (the first of equals), in the class FixOf knows. A message without node counts (an unbound PVC is
// reported before any node is filtered) is classified by its text.
func SchedulingDetail(msg string) string {
	// The part before "preemption:" lists why each node was filtered; the rest is what preemption could do.
	body, _, _ := strings.Cut(msg, "preemption:")
	if _, after, ok := strings.Cut(body, "are available:"); ok {
		best, bestN := "", -1
		for _, m := range schedulingReason.FindAllStringSubmatch(after, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				continue
			}
			if n > bestN {
				best, bestN = m[2], n
			}
		}
		if bestN >= 0 {
			return schedulingDetail(best)
		}
	}
	return schedulingDetail(body)
}

// ClassifyEvent says what an Event about a pod means for its start-up; ok is false for an Event that slows
// nothing (Scheduled, Pulled, Started…).
func ClassifyEvent(reason, message string) (c EventClass, ok bool) {
	l := strings.ToLower(message)
	switch reason {
	case "FailedScheduling":
		return EventClass{ClassScheduling, SchedulingDetail(message), "schedule"}, true
	case "FailedCreatePodSandBox", "FailedPodSandBoxStatus":
		d := "runtime"
		switch {
		case strings.Contains(l, "no runtime for") || strings.Contains(l, "runtimehandler") || strings.Contains(l, "runtime handler"):
			d = "RuntimeClass handler"
		case strings.Contains(l, "network") || strings.Contains(l, "cni"):
			d = "CNI"
		}
		return EventClass{ClassSandbox, d, "sandbox"}, true
	case "FailedMount":
		return EventClass{ClassMount, "", "sandbox"}, true
	case "FailedAttachVolume":
		return EventClass{ClassAttach, "", "sandbox"}, true
	case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InspectFailed":
		return EventClass{ClassImagePull, reason, "start"}, true
	case "Failed", "BackOff":
		switch {
		case strings.Contains(l, "image") || strings.Contains(l, "pull"):
			d := "ErrImagePull"
			if reason == "BackOff" {
				d = "ImagePullBackOff"
			}
			return EventClass{ClassImagePull, d, "start"}, true
		case reason == "BackOff" && strings.Contains(l, "restarting"):
			return EventClass{ClassCrashLoop, "", "start"}, true
		case reason == "Failed":
			return EventClass{"Failed", "", "start"}, true
		}
	case "Unhealthy":
		d := "probe"
		for _, p := range []string{"Readiness", "Liveness", "Startup"} {
			if strings.HasPrefix(message, p) {
				d = strings.ToLower(p) + " probe"
			}
		}
		return EventClass{ClassUnhealthy, d, PhaseReady}, true
	case "Evicted":
		return EventClass{ClassEvicted, "", PhaseAny}, true
	case "NodeNotReady":
		return EventClass{ClassNodeDown, "", PhaseAny}, true
	}
	return EventClass{}, false
}

// PodEvent is one Event object about a pod, as far as its start-up is concerned: its class, how many times it
// happened (the Event's count, or its series'), when first and last, and its message.
type PodEvent struct {
	UID         string
	Class       EventClass
	Count       int
	First, Last time.Time
	Message     string
}

// recordEvent adds or updates (an Event object's count grows as it recurs: one entry per UID) e in evs.
func recordEvent(evs []PodEvent, e PodEvent) []PodEvent {
	for i := range evs {
		if evs[i].UID == e.UID && e.UID != "" {
			if e.First.IsZero() || (!evs[i].First.IsZero() && evs[i].First.Before(e.First)) {
				e.First = evs[i].First
			}
			evs[i] = e
			return evs
		}
	}
	return append(evs, e)
}

// eventSummary is one event class over the slow pods: how many slow pods it was on, how many times it
// happened, first and last, and the latest message.
type eventSummary struct {
	class       EventClass
	pods, count int
	first, last time.Time
	example     string
}

// summarizeEvents groups the events of pods by class, most pods first (then most events, then by name).
func summarizeEvents(pods [][]PodEvent) []eventSummary {
	by := map[EventClass]*eventSummary{}
	for _, evs := range pods {
		seen := map[EventClass]bool{}
		for _, e := range evs {
			s := by[e.Class]
			if s == nil {
				s = &eventSummary{class: e.Class}
				by[e.Class] = s
			}
			if !seen[e.Class] {
				seen[e.Class] = true
				s.pods++
			}
			s.count += max(1, e.Count)
			if !e.First.IsZero() && (s.first.IsZero() || e.First.Before(s.first)) {
				s.first = e.First
			}
			if e.Last.After(s.last) || s.example == "" {
				if e.Last.After(s.last) {
					s.last = e.Last
				}
				s.example = e.Message
			}
		}
	}
	out := make([]eventSummary, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].pods != out[j].pods {
			return out[i].pods > out[j].pods
		}
		if out[i].count != out[j].count {
			return out[i].count > out[j].count
		}
		return out[i].class.String() < out[j].class.String()
	})
	return out
}

// FixOf is the remedy for an event class (KS-POD-EVENTS names the one for the class that dominated).
func FixOf(c EventClass) string {
	switch c.Class {
	case ClassScheduling:
		switch c.Detail {
		case "Insufficient cpu", "Insufficient memory", "Insufficient resources":
			return "the pods' requests do not fit the nodes' free allocatable: add nodes (or let the cluster autoscaler), lower the requests, or evict what holds the capacity"
		case "Too many pods":
			return "the nodes' pod limit (kubelet maxPods) is reached: add nodes or raise maxPods with the pod CIDR to match"
		case "untolerated taint":
			return "the nodes carry taints the pods do not tolerate: add the toleration or remove the taint (a NotReady/unreachable taint points at the node)"
		case "affinity/selector":
			return "no node matches the pods' nodeSelector, affinity, anti-affinity or topology spread: relax them or label nodes to match"
		case "unbound PVC":
			return "a PersistentVolumeClaim is not bound: check its StorageClass, the provisioner and the volume's zone"
		}
		return "read the scheduler's message on the pods' FailedScheduling events"
	case ClassSandbox:
		if c.Detail == "RuntimeClass handler" {
			return "the pod's RuntimeClass names a handler the node's container runtime does not have: configure it in the runtime, or place such pods with the RuntimeClass's scheduling.nodeSelector"
		}
		return "the sandbox fails: check the node's CNI configuration and plugin (IPAM exhaustion, a missing conf in /etc/cni/net.d) and the container runtime's log"
	case ClassMount, ClassAttach:
		return "volumes do not mount or attach: check the CSI driver, the volume's attachment to another node, and Secrets/ConfigMaps the pod mounts"
	case ClassImagePull:
		return "images do not pull: check the image name and tag, registry credentials (imagePullSecrets), rate limits and the registry's reachability"
	case ClassCrashLoop, "Failed":
		return "containers fail to start or keep exiting: read their logs and lastState (OOMKilled, exit codes)"
	case ClassUnhealthy:
		return "probes fail: check the probe's endpoint and timeout against the app's start-up time (a startupProbe), and the app's CPU limit"
	case ClassEvicted:
		return "the kubelet evicts pods under node pressure: check the nodes' memory, disk and PID pressure and the pods' requests"
	case ClassNodeDown:
		return "the pods' node went NotReady: see the node findings (kubelet, runtime, network)"
	}
	return "read the pods' events"
}

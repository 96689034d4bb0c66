package nodestatus

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// conditionText is what a condition says in one of its two states.
type conditionText struct {
	reason, message, event string
}

// pressureTexts is what a pressure condition says under pressure (yes)
// and without (no). The setters point to these rather than copy them:
// an agent of a thousand virtual nodes has three thousand setters.
type pressureTexts struct{ yes, no conditionText }

var (
	memoryPressureTexts = pressureTexts{
		conditionText{"KubeletHasInsufficientMemory", "kubelet has insufficient memory available", "NodeHasInsufficientMemory"},
		conditionText{"KubeletHasSufficientMemory", "kubelet has sufficient memory available", "NodeHasSufficientMemory"}}
	diskPressureTexts = pressureTexts{
		conditionText{"KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure"},
		conditionText{"KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure"}}
	pidPressureTexts = pressureTexts{
		conditionText{"KubeletHasInsufficientPID", "kubelet has insufficient PID available", "NodeHasInsufficientPID"},
		conditionText{"KubeletHasSufficientPID", "kubelet has sufficient PID available", "NodeHasSufficientPID"}}
)

// flipTracker remembers the last status a condition setter decided on, so a
// transition whose patch did not reach the API server keeps its first
// transition time and emits its event once, however many retries it takes.
type flipTracker struct {
	mu     sync.Mutex
	status v1.ConditionStatus
	at     metav1.Time
}

// decide returns the transition time for status given the condition the
// node currently has (nil if none), and whether this is a new flip.
func (f *flipTracker) decide(cur *v1.NodeCondition, status v1.ConditionStatus, now metav1.Time) (metav1.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case cur != nil && cur.Status == status:
		f.status, f.at = status, cur.LastTransitionTime
		return cur.LastTransitionTime, false
	case f.status == status && !f.at.IsZero():
		return f.at, false // flipped before; the report has not landed yet
	}
	f.status, f.at = status, now
	return now, true
}

func findCondition(node *v1.Node, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// setCondition writes c into node, replacing the condition of its type or
// appending it.
func setCondition(node *v1.Node, c v1.NodeCondition) {
	if cur := findCondition(node, c.Type); cur != nil {
		*cur = c
		return
	}
	node.Status.Conditions = append(node.Status.Conditions, c)
}

// pressureCondition builds the setter shared by the three pressure
// conditions: True with the "insufficient" text under pressure, False
// otherwise; heartbeat refreshed every time, transition time and event
// only on a flip.
func pressureCondition(name string, t v1.NodeConditionType, pressure func() bool, rec Recorder, texts *pressureTexts) (Setter, error) {
	if pressure == nil {
		return nil, invalid("%s: pressure func is required", name)
	}
	var flips flipTracker
	return func(ctx context.Context, at time.Time, node *v1.Node) error {
		now := metav1.NewTime(at)
		status, text := v1.ConditionFalse, &texts.no
		if pressure() {
			status, text = v1.ConditionTrue, &texts.yes
		}
		cur := findCondition(node, t)
		lt, flipped := flips.decide(cur, status, now)
		c := v1.NodeCondition{Type: t, Status: status, LastHeartbeatTime: now, LastTransitionTime: lt, Reason: text.reason, Message: text.message}
		if cur != nil && !flipped && cur.Status == status {
			c.Reason, c.Message = cur.Reason, cur.Message
			if c.Reason == "" {
				c.Reason, c.Message = text.reason, text.message
			}
		}
		setCondition(node, c)
		if flipped {
			rec.statusEvent(ctx, node, v1.EventTypeNormal, text.event)
		}
		return nil
	}, nil
}

// MemoryPressureCondition returns the setter of the MemoryPressure condition
// (pressure is typically the eviction manager's IsUnderMemoryPressure).
// rec may be nil.
func MemoryPressureCondition(pressure func() bool, rec Recorder) (Setter, error) {
	return pressureCondition("MemoryPressureCondition", v1.NodeMemoryPressure, pressure, rec, &memoryPressureTexts)
}

// DiskPressureCondition returns the setter of the DiskPressure condition.
func DiskPressureCondition(pressure func() bool, rec Recorder) (Setter, error) {
	return pressureCondition("DiskPressureCondition", v1.NodeDiskPressure, pressure, rec, &diskPressureTexts)
}

// PIDPressureCondition returns the setter of the PIDPressure condition.
func PIDPressureCondition(pressure func() bool, rec Recorder) (Setter, error) {
	return pressureCondition("PIDPressureCondition", v1.NodePIDPressure, pressure, rec, &pidPressureTexts)
}

// ReadyConfig configures ReadyCondition. Every error func is optional; a
// nil one reports no error. Each is called once per computation.
type ReadyConfig struct {
	// RuntimeErrors reports the container runtime's health (e.g. "container
	// runtime is down", PLEG unhealthy).
	RuntimeErrors func() error
	// NetworkErrors reports the network plugin's readiness.
	NetworkErrors func() error
	// StorageErrors reports CSI/storage readiness.
	StorageErrors func() error
	// ShutdownErrors reports a node shutdown in progress.
	ShutdownErrors func() error
	// SoftRequirements reports unmet soft requirements, appended to the
	// message as a warning without making the node NotReady.
	SoftRequirements func() error
	// IgnoreEphemeralStorage drops ephemeral-storage from the required
	// capacities (the kubelet requires it when local storage capacity
	// isolation is on, its default).
	IgnoreEphemeralStorage bool
	// Recorder receives NodeReady / NodeNotReady on a flip.
	Recorder Recorder
}

// requiredCapacity is what a node must have capacity of to be Ready,
// ephemeral storage last (ReadyConfig.IgnoreEphemeralStorage). Read only.
var requiredCapacity = [...]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage}

// ReadyCondition returns the setter of the Ready condition: True
// ("KubeletReady") unless a runtime, network, storage or shutdown error is
// reported or cpu, memory, pods (and ephemeral-storage) capacity is
// missing, in which case False ("KubeletNotReady") with the errors
// aggregated in the message. The Ready condition is always moved last
// (older API clients read the last condition).
func ReadyCondition(cfg ReadyConfig) (Setter, error) {
	required := requiredCapacity[:]
	if cfg.IgnoreEphemeralStorage {
		required = requiredCapacity[:len(requiredCapacity)-1]
	}
	var flips flipTracker
	return func(ctx context.Context, at time.Time, node *v1.Node) error {
		now := metav1.NewTime(at)
		c := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now}
		if msg := readyErrors(cfg, node, required); msg != "" {
			c.Status, c.Reason, c.Message = v1.ConditionFalse, "KubeletNotReady", msg
		}
		if cfg.SoftRequirements != nil {
			if soft := cfg.SoftRequirements(); soft != nil {
				c.Message = fmt.Sprintf("%s. WARNING: %s", c.Message, soft.Error())
			}
		}
		cur := findCondition(node, v1.NodeReady)
		var flipped bool
		c.LastTransitionTime, flipped = flips.decide(cur, c.Status, now)
		setCondition(node, c)
		moveReadyLast(node)
		if !flipped || cur == nil { // a new condition is not a flip
			return nil
		}
		if c.Status == v1.ConditionTrue {
			cfg.Recorder.statusEvent(ctx, node, v1.EventTypeNormal, "NodeReady")
		} else {
			cfg.Recorder.statusEvent(ctx, node, v1.EventTypeNormal, "NodeNotReady")
			klog.FromContext(ctx).Info("Node became not ready", "node", klog.KObj(node), "condition", c)
		}
		return nil
	}, nil
}

func readyErrors(cfg ReadyConfig, node *v1.Node, required []v1.ResourceName) string {
	var errs []error
	for _, f := range []func() error{cfg.RuntimeErrors, cfg.NetworkErrors, cfg.StorageErrors, cfg.ShutdownErrors} {
		if f != nil {
			if err := f(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	var missing []string
	for _, r := range required {
		if _, ok := node.Status.Capacity[r]; !ok {
			missing = append(missing, string(r))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
	}
	return aggregateMessage(errs)
}

// aggregateMessage formats errors like apimachinery's Aggregate: one error
// as is, several as "[a, b]". Empty means none.
func aggregateMessage(errs []error) string {
	switch len(errs) {
	case 0:
		return ""
	case 1:
		return errs[0].Error()
	}
	parts := make([]string, 0, len(errs))
	seen := map[string]bool{}
	for _, err := range errs {
		for _, e := range flatten(err) {
			if s := e.Error(); !seen[s] {
				seen[s] = true
				parts = append(parts, s)
			}
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// moveReadyLast keeps the Ready condition at the end of the list.
func moveReadyLast(node *v1.Node) {
	cs := node.Status.Conditions
	for i := range cs {
		if cs[i].Type == v1.NodeReady && i != len(cs)-1 {
			ready := cs[i]
			copy(cs[i:], cs[i+1:])
			cs[len(cs)-1] = ready
			return
		}
	}
}

package nodestatus

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// StatusChanged reports whether status differs from old in anything but the
// conditions' heartbeat times: the kubelet's test for "report now". The
// order of conditions does not matter; quantities compare by value ("1Gi"
// and "1073741824" are equal) and empty lists equal missing ones, as in
// equality.Semantic.
func StatusChanged(old, status *v1.NodeStatus) bool {
	if old == nil || status == nil {
		return old != status
	}
	return conditionsChanged(old.Conditions, status.Conditions) || !statusEqual(old, status)
}

// conditionsChanged compares conditions by type, ignoring heartbeat times.
func conditionsChanged(old, cur []v1.NodeCondition) bool {
	if len(old) != len(cur) {
		return true
	}
	for i := range cur {
		c := &cur[i]
		o := &old[i]
		if o.Type != c.Type { // not in the same order: look it up
			o = nil
			for j := range old {
				if old[j].Type == c.Type {
					o = &old[j]
					break
				}
			}
			if o == nil {
				return true
			}
		}
		if o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message ||
			!o.LastTransitionTime.Equal(&c.LastTransitionTime) {
			return true
		}
	}
	return false
}

// StatusPatch returns the strategic merge patch that turns old into node for
// the status subresource: metadata and status only (spec differences are
// ignored), with status.addresses replaced as a whole list rather than
// merged by type (the API's merge key for addresses is wrong for a node with
// two InternalIPs).
//
// The common patch, a periodic report where only the conditions' heartbeat
// times moved, is built directly rather than by diffing the two Nodes'
// JSON (the same bytes, a fraction of the cost).
func StatusPatch(old, node *v1.Node) ([]byte, error) {
	if patch, ok := heartbeatPatch(old, node); ok {
		return patch, nil
	}
	return diffStatusPatch(old, node)
}

// diffStatusPatch is StatusPatch by a diff of the two Nodes' JSON.
func diffStatusPatch(old, node *v1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("nodestatus: marshal node %q: %w", old.Name, err)
	}
	replaceAddresses := len(old.Status.Addresses) > 0 && !equality.Semantic.DeepEqual(old.Status.Addresses, node.Status.Addresses)
	diff := *node // shallow: only Spec and Status.Addresses are swapped
	diff.Spec = old.Spec
	if replaceAddresses {
		diff.Status.Addresses = old.Status.Addresses
	}
	newJSON, err := json.Marshal(&diff)
	if err != nil {
		return nil, fmt.Errorf("nodestatus: marshal node %q: %w", node.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("nodestatus: status patch for node %q: %w", node.Name, err)
	}
	if replaceAddresses {
		return withReplacedAddresses(patch, node.Status.Addresses)
	}
	return patch, nil
}

// withReplacedAddresses puts the full address list into patch behind the
// strategic-merge "$patch: replace" directive.
func withReplacedAddresses(patch []byte, addrs []v1.NodeAddress) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("nodestatus: decode status patch: %w", err)
	}
	status, _ := p["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		p["status"] = status
	}
	list := []any{map[string]any{"$patch": "replace"}}
	for _, a := range addrs {
		list = append(list, map[string]any{"type": string(a.Type), "address": a.Address})
	}
	status["addresses"] = list
	return json.Marshal(p)
}

// heartbeatPatch builds the status patch of two Nodes that differ in their
// conditions' heartbeat times only; false if they differ in anything else
// (or a heartbeat is unset).
func heartbeatPatch(old, node *v1.Node) ([]byte, bool) {
	if StatusChanged(&old.Status, &node.Status) || !equality.Semantic.DeepEqual(&old.ObjectMeta, &node.ObjectMeta) {
		return nil, false
	}
	type typeOnly struct {
		Type v1.NodeConditionType `json:"type"`
	}
	type heartbeat struct {
		LastHeartbeatTime metav1.Time          `json:"lastHeartbeatTime"`
		Type              v1.NodeConditionType `json:"type"`
	}
	var p struct {
		Status struct {
			Order      []typeOnly  `json:"$setElementOrder/conditions"`
			Conditions []heartbeat `json:"conditions"`
		} `json:"status"`
	}
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if c.LastHeartbeatTime.IsZero() {
			return nil, false
		}
		p.Status.Order = append(p.Status.Order, typeOnly{c.Type})
		o := findCondition(old, c.Type)
		if o == nil { // (StatusChanged found every type in old)
			return nil, false
		}
		if !o.LastHeartbeatTime.Equal(&c.LastHeartbeatTime) {
			p.Status.Conditions = append(p.Status.Conditions, heartbeat{c.LastHeartbeatTime, c.Type})
		}
	}
	if len(p.Status.Conditions) == 0 {
		return []byte("{}"), true
	}
	patch, err := json.Marshal(&p)
	return patch, err == nil
}

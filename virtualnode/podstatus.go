package virtualnode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/nodekit/nodekit/podstatus"
)

// StatusChanged reports whether status differs from old: the test for
// "patch now". Times compare by instant, not location.
func StatusChanged(old, status *v1.PodStatus) bool {
	a, errA := old.Marshal()
	b, errB := status.Marshal()
	if errA != nil || errB != nil {
		return !apiequality.Semantic.DeepEqual(old, status)
	}
	return !bytes.Equal(a, b)
}

// PodStatusPatch returns the strategic merge patch of the status
// subresource that turns old into status, with the pod's UID as a
// precondition (a pod recreated under the same name is not patched).
func PodStatusPatch(uid types.UID, old, status *v1.PodStatus) ([]byte, error) {
	type meta struct {
		UID types.UID `json:"uid,omitempty"`
	}
	type doc struct {
		Metadata meta          `json:"metadata"`
		Status   *v1.PodStatus `json:"status"`
	}
	oldJSON, err := json.Marshal(doc{Status: old})
	if err != nil {
		return nil, fmt.Errorf("virtualnode: marshal status: %w", err)
	}
	newJSON, err := json.Marshal(doc{Metadata: meta{UID: uid}, Status: status})
	if err != nil {
		return nil, fmt.Errorf("virtualnode: marshal status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("virtualnode: status patch: %w", err)
	}
	return patch, nil
}

// othersStatusField reports whether name (a JSON name) is one of the pod
// status fields others write, the scheduler and the resource claim
// controller. The agent's status patches leave them alone.
func othersStatusField(name string) bool {
	switch name {
	case "nominatedNodeName", "resourceClaimStatuses", "extendedResourceClaimStatus":
		return true
	}
	return false
}

// ownedStatusPatch returns a strategic merge patch of the status
// subresource that makes every status field the agent owns equal to
// status's whatever the API server has, so that it needs no copy of the
// server's status: fields status lacks are null, the pod and host IP lists
// and nested objects are replaced whole, and each condition is sent whole
// (its empty fields null) if the kubelet owns its type or status changed
// it from found's; a kubelet-owned condition status lacks is deleted. The
// fields others write and their unchanged conditions are not in it. The
// pod's UID is a precondition.
func ownedStatusPatch(uid types.UID, found, status *v1.PodStatus) ([]byte, error) {
	st, err := jsonObject(status)
	if err != nil {
		return nil, err
	}
	nullMissing(st, reflect.TypeFor[v1.PodStatus](), func(name string) bool { return name == "conditions" })
	for name := range st {
		if othersStatusField(name) {
			delete(st, name)
		}
	}
	for name, v := range st {
		switch v := v.(type) {
		case map[string]any: // resources, allocatedResources
			v["$patch"] = "replace"
		case []any:
			if name == "podIPs" || name == "hostIPs" { // merged by IP otherwise
				st[name] = append([]any{map[string]any{"$patch": "replace"}}, v...)
			}
		}
	}
	var conds []any
	sent := map[v1.PodConditionType]bool{}
	for _, c := range status.Conditions {
		if !podstatus.OwnedByKubelet(c.Type) && slices.ContainsFunc(found.Conditions, func(f v1.PodCondition) bool {
			return apiequality.Semantic.DeepEqual(f, c)
		}) {
			continue
		}
		obj, err := jsonObject(&c)
		if err != nil {
			return nil, err
		}
		nullMissing(obj, reflect.TypeFor[v1.PodCondition](), nil)
		conds, sent[c.Type] = append(conds, obj), true
	}
	for _, t := range podstatus.KubeletConditionTypes() {
		if !sent[t] {
			conds = append(conds, map[string]any{"type": string(t), "$patch": "delete"})
		}
	}
	if len(conds) > 0 {
		st["conditions"] = conds
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "status": st})
	if err != nil {
		return nil, fmt.Errorf("virtualnode: status patch: %w", err)
	}
	return patch, nil
}

// jsonObject returns v's JSON encoding as a map (numbers kept exact).
func jsonObject(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("virtualnode: marshal status: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, fmt.Errorf("virtualnode: marshal status: %w", err)
	}
	return obj, nil
}

// nullMissing sets to null each field of struct type t (by JSON name) that
// obj, t's JSON encoding, lacks, unless skip says so: in a merge patch
// that clears the field.
func nullMissing(obj map[string]any, t reflect.Type, skip func(name string) bool) {
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || (skip != nil && skip(name)) {
			continue
		}
		if _, set := obj[name]; !set {
			obj[name] = nil
		}
	}
}

// statusSum returns a digest of status: equal statuses have equal sums
// (times compare as instants, conditions in any order), and a differing
// one a differing sum but for a 2^-64 chance.
func statusSum(seed maphash.Seed, status *v1.PodStatus) (uint64, error) {
	s := *status
	if !slices.IsSortedFunc(s.Conditions, byConditionType) {
		s.Conditions = slices.SortedFunc(slices.Values(s.Conditions), byConditionType)
	}
	enc, err := s.Marshal()
	if err != nil {
		return 0, fmt.Errorf("virtualnode: encode status: %w", err)
	}
	return maphash.Bytes(seed, enc), nil
}

func byConditionType(a, b v1.PodCondition) int {
	return strings.Compare(string(a.Type), string(b.Type))
}

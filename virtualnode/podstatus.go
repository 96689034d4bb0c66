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

// statusShape tells which parts of a pod status are set: bit i for the
// i-th field of v1.PodStatus when not empty, and from bit 32 four bits per
// condition type the kubelet owns (by index in
// podstatus.KubeletConditionTypes): present, reason, message, observed
// generation set. Kept beside the digest of the API server's status, it
// lets a patch clear exactly what the server has and the new status lacks
// without a copy of the server's status.
type statusShape uint64

// unknownShape is the shape of a status not seen: everything may be set.
const unknownShape = ^statusShape(0)

// shapeOf returns the shape of s.
func shapeOf(s *v1.PodStatus) statusShape {
	var sh statusShape
	v := reflect.ValueOf(s).Elem()
	for i := range min(v.NumField(), 32) {
		if f := v.Field(i); !emptyValue(f) {
			sh |= 1 << i
		}
	}
	types := podstatus.KubeletConditionTypes()
	for i := range s.Conditions {
		if j := slices.Index(types, s.Conditions[i].Type); j >= 0 && j < 8 {
			sh |= conditionSet(&s.Conditions[i]) << (32 + 4*j)
		}
	}
	return sh
}

// conditionSet returns a condition's four shape bits: present, reason,
// message, observed generation set.
func conditionSet(c *v1.PodCondition) statusShape {
	bits := statusShape(1)
	if c.Reason != "" {
		bits |= 2
	}
	if c.Message != "" {
		bits |= 4
	}
	if c.ObservedGeneration != 0 {
		bits |= 8
	}
	return bits
}

// conditionBits returns the shape's four bits of the j-th kubelet
// condition type (all set for a type past the shape's room).
func (sh statusShape) conditionBits(j int) statusShape {
	if j >= 8 {
		return 15
	}
	return sh >> (32 + 4*j) & 15
}

// emptyValue reports whether a field is left out of its JSON encoding
// (omitempty).
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return v.IsZero()
}

// ownedStatusPatch returns a strategic merge patch of the status
// subresource that makes every status field the agent owns equal to
// status's, given found (the API server's status as the cache has it,
// possibly trimmed) and server (the shape of the server's full status).
// It needs no copy of the server's status: a field status lacks is null if
// the server has it; one status has is sent unless found has it equal (the
// pod and host IP lists whole, nested objects replaced); a condition is
// sent whole unless found has it equal, its empty fields null where the
// server's has them; a kubelet-owned condition status lacks is deleted if
// the server has it. The fields others write and their unchanged
// conditions are not in it. The pod's UID is a precondition.
func ownedStatusPatch(uid types.UID, found, status *v1.PodStatus, server statusShape) ([]byte, error) {
	st, err := jsonObject(status)
	if err != nil {
		return nil, err
	}
	typ := reflect.TypeFor[v1.PodStatus]()
	fv, sv := reflect.ValueOf(found).Elem(), reflect.ValueOf(status).Elem()
	for i := range typ.NumField() {
		name := jsonName(typ.Field(i))
		if name == "" || name == "conditions" {
			continue
		}
		v, set := st[name]
		switch {
		case othersStatusField(name):
			delete(st, name)
		case !set:
			if i >= 32 || server&(1<<i) != 0 {
				st[name] = nil
			}
		case apiequality.Semantic.DeepEqual(fv.Field(i).Interface(), sv.Field(i).Interface()):
			delete(st, name) // unchanged
		default:
			switch v := v.(type) {
			case map[string]any: // resources, allocatedResources
				v["$patch"] = "replace"
			case []any:
				if name == "podIPs" || name == "hostIPs" { // merged by IP otherwise
					st[name] = append([]any{map[string]any{"$patch": "replace"}}, v...)
				}
			}
		}
	}
	types := podstatus.KubeletConditionTypes()
	var conds []any
	for _, c := range status.Conditions {
		prev := podstatus.FindCondition(found.Conditions, c.Type)
		if prev != nil && apiequality.Semantic.DeepEqual(*prev, c) {
			continue
		}
		obj, err := jsonObject(&c)
		if err != nil {
			return nil, err
		}
		// What the server's condition has set: found's says exactly; of a
		// kubelet-owned type a trimmed found lacks, the shape; a condition
		// of another type found lacks is new.
		var had statusShape
		if prev != nil {
			had = conditionSet(prev)
		} else if j := slices.Index(types, c.Type); j >= 0 {
			had = server.conditionBits(j)
		}
		for bit, name := range map[statusShape]string{2: "reason", 4: "message", 8: "observedGeneration"} {
			if _, set := obj[name]; !set && had&bit != 0 {
				obj[name] = nil
			}
		}
		conds = append(conds, obj)
	}
	for j, t := range types {
		if podstatus.FindCondition(status.Conditions, t) == nil && server.conditionBits(j)&1 != 0 {
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

// jsonName returns the JSON name of a struct field, "" if it has none.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// statusSum returns a digest of status: equal statuses have equal sums
// (times compare as instants, conditions in any order), and a differing
// one a differing sum but for a 2^-64 chance.
func statusSum(seed maphash.Seed, status *v1.PodStatus) (uint64, error) {
	s := *status
	if !slices.IsSortedFunc(s.Conditions, byConditionType) { // sorted: no copy
		s.Conditions = slices.Clone(s.Conditions)
		slices.SortFunc(s.Conditions, byConditionType)
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

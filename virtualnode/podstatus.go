package virtualnode

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
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

package volumes

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// ErrNodeUnknown is the cause of a PersistentVolume with node affinity
// refused because the node's labels are not known (Config.Node is nil or
// returned nil): the affinity cannot be checked, so the volume is not
// mounted.
var ErrNodeUnknown = errors.New("volumes: the node is not known")

// nodeAffinityCheck is the kubelet's name of the operation that refuses a
// PersistentVolume whose node affinity does not select the node.
const nodeAffinityCheck = "MountVolume.NodeAffinity check failed"

// errNoMatchingTerms is the kubelet's reason for a PersistentVolume whose
// required node affinity selects no node with these labels.
var errNoMatchingTerms = errors.New("no matching NodeSelectorTerms")

// opError is a volume failure the kubelet reports under the name of its
// own operation rather than as "MountVolume.SetUp failed".
type opError struct {
	op     string // "MountVolume.NodeAffinity check failed"
	volume string // as the kubelet names it: the PersistentVolume's name
	err    error
}

func (e *opError) Error() string { return fmt.Sprintf("%s for volume %q : %v", e.op, e.volume, e.err) }

// Unwrap returns the cause.
func (e *opError) Unwrap() error { return e.err }

// failedMountMessage is the FailedMount message of a pod volume's setup
// failure, as the kubelet words it.
func failedMountMessage(volume string, err error) string {
	var op *opError
	if errors.As(err, &op) {
		return op.Error()
	}
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", volume, err)
}

// checkNodeAffinity refuses a PersistentVolume whose required node
// affinity does not select this node (Config.Node), whatever its source,
// before anything is mounted. Without the node, such a volume is refused
// too; a volume without required node affinity is not checked.
func (m *Manager) checkNodeAffinity(pv *v1.PersistentVolume) error {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var node *v1.Node
	if m.cfg.Node != nil {
		node = m.cfg.Node()
	}
	if node == nil {
		return &opError{op: nodeAffinityCheck, volume: pv.Name,
			err: fmt.Errorf("%w, so the volume's node affinity cannot be checked", ErrNodeUnknown)}
	}
	if err := matchNodeAffinity(pv, node.Name, node.Labels); err != nil {
		return &opError{op: nodeAffinityCheck, volume: pv.Name, err: err}
	}
	return nil
}

// matchNodeAffinity reports whether pv's required node affinity selects
// the node with this name and labels: nil if it does (or pv has none),
// errNoMatchingTerms if not, or the error of an invalid selector. Upstream
// (component-helpers storage/volume.CheckNodeAffinity) matches a Node with
// the labels and no name, so a term on the node's name (matchFields
// metadata.name) selects no node there; here it is matched against name,
// as the scheduler matches it.
func matchNodeAffinity(pv *v1.PersistentVolume, name string, labels map[string]string) error {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	ok, err := nodeaffinity.NewLazyErrorNodeSelector(pv.Spec.NodeAffinity.Required).Match(node)
	if err != nil {
		return err
	}
	if !ok {
		return errNoMatchingTerms
	}
	return nil
}

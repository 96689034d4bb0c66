package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// InitCSINode creates the node's CSINode object if it does not exist yet,
// with no drivers (the kubelet creates it at start, so the scheduler finds
// one for every node). The Node must exist.
func (d *Drivers) InitCSINode(ctx context.Context) error {
	if d.cfg.Client == nil {
		return nil
	}
	return d.updateCSINode(ctx, func(*storagev1.CSINode) bool { return false })
}

// installNodeInfo publishes a driver's node information: the Node's
// annotation and topology labels in one write, then the CSINode entry. A
// topology label the Node has with another value fails it before
// anything is written.
func (d *Drivers) installNodeInfo(ctx context.Context, name string, info *csipb.NodeGetInfoResponse) error {
	topology := info.GetAccessibleTopology().GetSegments()
	err := d.updateNode(ctx, func(n *v1.Node) (bool, error) {
		if err := checkTopology(n, topology); err != nil {
			return false, err
		}
		changed := setNodeID(n, name, info.GetNodeId())
		return setLabels(n, topology) || changed, nil
	})
	if err != nil {
		return fmt.Errorf("update the node's CSI annotation and topology labels: %w", err)
	}
	keys := slices.Sorted(maps.Keys(topology))
	entry := storagev1.CSINodeDriver{Name: name, NodeID: info.GetNodeId(), TopologyKeys: keys}
	if n := info.GetMaxVolumesPerNode(); n > 0 {
		count := int32(min(n, int64(1<<31-1)))
		entry.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
	}
	err = d.updateCSINode(ctx, func(c *storagev1.CSINode) bool {
		i := slices.IndexFunc(c.Spec.Drivers, func(e storagev1.CSINodeDriver) bool { return e.Name == name })
		if i < 0 {
			c.Spec.Drivers = append(c.Spec.Drivers, entry)
			return true
		}
		old := c.Spec.Drivers[i]
		if old.NodeID == entry.NodeID && slices.Equal(old.TopologyKeys, entry.TopologyKeys) && sameCount(old.Allocatable, entry.Allocatable) {
			return false
		}
		c.Spec.Drivers[i] = entry
		return true
	})
	if err != nil {
		return fmt.Errorf("update CSINode %s: %w", d.cfg.NodeName, err)
	}
	return nil
}

// uninstallNodeInfo removes a driver's node information.
func (d *Drivers) uninstallNodeInfo(ctx context.Context, name string) error {
	err := d.updateCSINode(ctx, func(c *storagev1.CSINode) bool {
		n := len(c.Spec.Drivers)
		c.Spec.Drivers = slices.DeleteFunc(c.Spec.Drivers, func(e storagev1.CSINodeDriver) bool { return e.Name == name })
		return len(c.Spec.Drivers) != n
	})
	if err != nil {
		return err
	}
	return d.updateNode(ctx, func(n *v1.Node) (bool, error) { return setNodeID(n, name, ""), nil })
}

// checkTopology refuses a driver's topology that would change a label the
// Node has (upstream's rule and message): the hostname, zone or region
// labels drive scheduling and local volumes' affinity, and are not a
// driver's to rewrite.
func checkTopology(n *v1.Node, topology map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(topology)) {
		if cur, ok := n.Labels[k]; ok && cur != topology[k] {
			return fmt.Errorf("%w: driver reported %q:%q but existing label is %q:%q", ErrTopologyCollision, k, topology[k], k, cur)
		}
	}
	return nil
}

// setLabels adds the driver's topology labels, reporting whether any
// changed.
func setLabels(n *v1.Node, topology map[string]string) bool {
	changed := false
	for k, v := range topology {
		if cur, ok := n.Labels[k]; !ok || cur != v {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[k], changed = v, true
		}
	}
	return changed
}

// setNodeID sets (or with "" removes) a driver's entry of the node ID
// annotation, reporting whether it changed.
func setNodeID(n *v1.Node, driver, id string) bool {
	ids := map[string]string{}
	if s, ok := n.Annotations[nodeIDAnnotation]; ok {
		if err := json.Unmarshal([]byte(s), &ids); err != nil {
			ids = map[string]string{} // unreadable: rewritten
		}
	}
	if cur, ok := ids[driver]; (id == "" && !ok) || (id != "" && ok && cur == id) {
		return false
	}
	if id == "" {
		delete(ids, driver)
	} else {
		ids[driver] = id
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	if len(ids) == 0 {
		delete(n.Annotations, nodeIDAnnotation)
		return true
	}
	b, _ := json.Marshal(ids) // map keys are sorted
	n.Annotations[nodeIDAnnotation] = string(b)
	return true
}

func sameCount(a, b *storagev1.VolumeNodeResources) bool {
	if a == nil || b == nil || a.Count == nil || b.Count == nil {
		return (a == nil || a.Count == nil) == (b == nil || b.Count == nil)
	}
	return *a.Count == *b.Count
}

// updateNode applies change to the Node and writes it if it changed,
// retrying on conflicts; an error of change is returned, and nothing
// written.
func (d *Drivers) updateNode(ctx context.Context, change func(*v1.Node) (bool, error)) error {
	nodes := d.cfg.Client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, d.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed, err := change(n)
		if err != nil || !changed {
			return err
		}
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// updateCSINode applies change to the node's CSINode, creating it (owned
// by the Node, so it goes with it) if missing.
func (d *Drivers) updateCSINode(ctx context.Context, change func(*storagev1.CSINode) bool) error {
	api := d.cfg.Client.StorageV1().CSINodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := api.Get(ctx, d.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			node, err := d.cfg.Client.CoreV1().Nodes().Get(ctx, d.cfg.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			c = &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: d.cfg.NodeName,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}}}
			change(c)
			if c.Spec.Drivers == nil {
				c.Spec.Drivers = []storagev1.CSINodeDriver{}
			}
			_, err = api.Create(ctx, c, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(storagev1.Resource("csinodes"), d.cfg.NodeName, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if !change(c) {
			return nil
		}
		_, err = api.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
}

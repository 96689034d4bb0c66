package nodestatus

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// AnnotationAttachDetach marks a Node whose volumes are attached by the
// attach/detach controller.
const AnnotationAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"

// defaultLabels are the labels the kubelet owns and reconciles on an
// existing Node.
func defaultLabels() []string {
	return []string{
		v1.LabelHostname, v1.LabelTopologyZone, v1.LabelTopologyRegion,
		v1.LabelFailureDomainBetaZone, v1.LabelFailureDomainBetaRegion,
		v1.LabelInstanceTypeStable, v1.LabelInstanceType,
		v1.LabelOSStable, v1.LabelArchStable, v1.LabelWindowsBuild,
		"beta.kubernetes.io/os", "beta.kubernetes.io/arch",
	}
}

// InitialNode returns the Node the controller registers: default labels
// (hostname, os, arch, and their beta forms), the configured labels, taints,
// annotations and provider ID, and the status from every setter. Setter
// errors are returned joined, with the node.
func (c *Controller) InitialNode(ctx context.Context) (*v1.Node, error) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: c.cfg.NodeName,
		Labels: map[string]string{
			v1.LabelHostname:          c.cfg.Hostname,
			v1.LabelOSStable:          goruntime.GOOS,
			v1.LabelArchStable:        goruntime.GOARCH,
			"beta.kubernetes.io/os":   goruntime.GOOS,
			"beta.kubernetes.io/arch": goruntime.GOARCH,
		},
	}}
	for k, v := range c.cfg.Labels {
		node.Labels[k] = v
	}
	if len(c.cfg.Taints) > 0 {
		node.Spec.Taints = append([]v1.Taint(nil), c.cfg.Taints...)
	}
	if ann := c.annotations(); len(ann) > 0 {
		node.Annotations = ann
	}
	node.Spec.ProviderID = c.cfg.ProviderID
	err := Apply(ctx, c.cfg.Clock.Now(), node, c.cfg.Setters)
	return node, err
}

func (c *Controller) annotations() map[string]string {
	ann := map[string]string{}
	if !c.cfg.DisableAttachDetachAnnotation {
		ann[AnnotationAttachDetach] = "true"
	}
	for k, v := range c.cfg.Annotations {
		ann[k] = v
	}
	return ann
}

// register makes one registration attempt: create the Node, or on
// AlreadyExists (or Forbidden, as a node may not be allowed to create but
// may read itself) reconcile the existing one.
func (c *Controller) register(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	node, setErr := c.InitialNode(ctx)
	logger.Info("Attempting to register node", "node", klog.KObj(node))
	rctx, cancel := c.requestContext(ctx)
	created, err := c.cfg.Client.Nodes().Create(rctx, node, metav1.CreateOptions{})
	cancel()
	switch {
	case err == nil:
		logger.Info("Successfully registered node", "node", klog.KObj(node))
		c.adopt(created)
		// The create carried the full status: count it as a report.
		c.lastReport = c.cfg.Clock.Now()
		c.delay = c.reportJitter()
		c.ready = isReady(created)
		return setErr
	case apierrors.IsAlreadyExists(err), apierrors.IsForbidden(err):
	default:
		return fmt.Errorf("nodestatus: register node %q: %w", c.cfg.NodeName, err)
	}
	rctx, cancel = c.requestContext(ctx)
	existing, gerr := c.cfg.Client.Nodes().Get(rctx, c.cfg.NodeName, metav1.GetOptions{})
	cancel()
	if gerr != nil {
		return fmt.Errorf("nodestatus: register node %q: %w (reading the existing node: %v)", c.cfg.NodeName, err, gerr)
	}
	logger.Info("Node was previously registered", "node", klog.KObj(node))
	reconciled := existing.DeepCopy()
	changed := reconcileNode(node, reconciled)
	if c.cfg.ResetExtendedResources != nil && c.cfg.ResetExtendedResources() {
		changed = zeroExtendedResources(reconciled) || changed
	}
	if !changed {
		c.adopt(existing)
		return setErr
	}
	patched, err := c.patchStatus(ctx, existing, reconciled)
	if err != nil {
		return fmt.Errorf("nodestatus: reconcile existing node %q: %w", c.cfg.NodeName, err)
	}
	c.adopt(patched)
	return setErr
}

// adopt records a Node the server returned as registered and last known.
// OnRegistered hears of it when the Node is new or its UID changed.
func (c *Controller) adopt(node *v1.Node) {
	first := !c.registered || c.last == nil || c.lastUID != node.UID
	c.registered = true
	c.remember(node)
	if first && c.cfg.OnRegistered != nil {
		c.cfg.OnRegistered(node.DeepCopy())
	}
}

// reconcileNode brings an existing Node in line with the initial one: the
// kubelet-owned labels, the configured annotations, capacity and allocatable
// if missing, and hugepage sizes. It reports whether anything changed.
func reconcileNode(initial, existing *v1.Node) bool {
	changed := false
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for _, l := range defaultLabels() {
		v, ok := initial.Labels[l]
		if !ok {
			continue
		}
		if existing.Labels[l] != v {
			existing.Labels[l] = v
			changed = true
		}
		if existing.Labels[l] == "" {
			delete(existing.Labels, l)
		}
	}
	if _, ok := initial.Annotations[AnnotationAttachDetach]; !ok {
		if _, had := existing.Annotations[AnnotationAttachDetach]; had {
			delete(existing.Annotations, AnnotationAttachDetach)
			changed = true
		}
	}
	for k, v := range initial.Annotations {
		if cur, ok := existing.Annotations[k]; !ok || cur != v {
			if existing.Annotations == nil {
				existing.Annotations = map[string]string{}
			}
			existing.Annotations[k] = v
			changed = true
		}
	}
	return reconcileResources(initial, existing) || changed
}

func reconcileResources(initial, existing *v1.Node) bool {
	changed := false
	if existing.Status.Capacity == nil {
		existing.Status.Capacity = initial.Status.Capacity.DeepCopy()
		changed = changed || initial.Status.Capacity != nil
	}
	if existing.Status.Allocatable == nil {
		existing.Status.Allocatable = initial.Status.Allocatable.DeepCopy()
		changed = changed || initial.Status.Allocatable != nil
	}
	if existing.Status.Capacity == nil {
		return changed
	}
	if existing.Status.Allocatable == nil {
		existing.Status.Allocatable = v1.ResourceList{}
	}
	for name, q := range initial.Status.Capacity {
		if !isHugePages(name) {
			continue
		}
		alloc := initial.Status.Allocatable[name]
		cur, ok := existing.Status.Capacity[name]
		curAlloc := existing.Status.Allocatable[name]
		if !ok || cur.Cmp(q) != 0 || curAlloc.Cmp(alloc) != 0 {
			existing.Status.Capacity[name] = q.DeepCopy()
			existing.Status.Allocatable[name] = alloc.DeepCopy()
			changed = true
		}
	}
	for name := range existing.Status.Capacity {
		if _, ok := initial.Status.Capacity[name]; isHugePages(name) && !ok {
			delete(existing.Status.Capacity, name)
			delete(existing.Status.Allocatable, name)
			changed = true
		}
	}
	return changed
}

// zeroExtendedResources sets every extended resource of node to zero and
// reports whether any was not.
func zeroExtendedResources(node *v1.Node) bool {
	changed := false
	for _, list := range []v1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		for name, q := range list {
			if isExtendedResource(name) && !q.IsZero() {
				list[name] = *resource.NewQuantity(0, resource.DecimalSI)
				changed = true
			}
		}
	}
	return changed
}

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// patchStatus sends the status patch from old to node and returns the
// server's Node.
func (c *Controller) patchStatus(ctx context.Context, old, node *v1.Node) (*v1.Node, error) {
	patch, err := StatusPatch(old, node)
	if err != nil {
		return nil, err
	}
	rctx, cancel := c.requestContext(ctx)
	defer cancel()
	updated, err := c.cfg.HeartbeatClient.Nodes().Patch(rctx, c.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("failed to patch status %q for node %q: %w", patch, c.cfg.NodeName, err)
	}
	return updated, nil
}

package virtualnode

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/podstatus"
	"github.com/nodekit/nodekit/podworkers"
)

// syncer is the podworkers.Syncer: it drives the Provider and reports pod
// status to the API server.
type syncer struct {
	cfg    *Config
	cache  *podCache
	hostIP func(nodeName string) string
	// yield is called before each pod write (Agent.yieldToLeases); nil:
	// none.
	yield func(ctx context.Context)
}

func (s *syncer) beforeWrite(ctx context.Context) {
	if s.yield != nil {
		s.yield(ctx)
	}
}

var _ podworkers.Syncer = (*syncer)(nil)

// SyncPod starts the pod in the provider and reports its status; the pod is
// terminal once the provider says Succeeded or Failed.
func (s *syncer) SyncPod(ctx context.Context, _ podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
	if err := s.cfg.Provider.CreatePod(ctx, pod); err != nil {
		return false, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	st, err := s.report(ctx, pod, nil)
	if err != nil {
		return false, err
	}
	return st != nil && (st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed), nil
}

// SyncTerminatingPod stops the containers within the grace period (the
// provider waits; a shorter grace period cancels ctx and calls again).
func (s *syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriod int64, statusFn podworkers.StatusFunc) error {
	if err := s.cfg.Provider.DeletePod(ctx, pod, time.Duration(gracePeriod)*time.Second); err != nil {
		return fmt.Errorf("stop pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	_, err := s.report(ctx, pod, statusFn)
	return err
}

// SyncTerminatingRuntimePod stops a pod known only to the provider.
func (s *syncer) SyncTerminatingRuntimePod(ctx context.Context, rp *podworkers.RuntimePod) error {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: rp.UID, Name: rp.Name, Namespace: rp.Namespace}}
	return s.cfg.Provider.DeletePod(ctx, pod, 0)
}

// SyncTerminatedPod reports the final status and, for a pod being deleted,
// finishes the deletion with a zero-grace delete (as the kubelet's status
// manager does once the containers are gone).
func (s *syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	if _, err := s.report(ctx, pod, nil); err != nil {
		return err
	}
	deleting := pod.DeletionTimestamp != nil
	if e := s.cache.entry(pod.UID); e != nil && e.deleting {
		deleting = true // the deletion came after the pod the workers had
	}
	if deleting {
		uid := pod.UID
		s.beforeWrite(ctx)
		err := s.cfg.Client.Pods(pod.Namespace).Delete(ctx, pod.Name,
			metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	s.cfg.Provider.ForgetPod(pod.UID)
	return nil
}

// report patches the provider's status of pod, merged with the status the
// API server has as the kubelet merges (conditions others own are kept, a
// terminal phase stays), if it differs from that. It returns the provider's
// status, nil if the provider has no record.
func (s *syncer) report(ctx context.Context, pod *v1.Pod, statusFn podworkers.StatusFunc) (*v1.PodStatus, error) {
	st, err := s.provided(ctx, pod, statusFn)
	if err != nil || st == nil {
		return st, err
	}
	last, known := s.cache.lastStatus(pod.UID)
	sum, err := statusSum(s.cache.seed, st)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if known && sum == last.sum {
		return st, nil // the steady state: the API server has the provider's status
	}
	found := &pod.Status
	if latest := s.cache.decode(s.cache.entry(pod.UID)); latest != nil {
		found = &latest.Status
	}
	merged := s.merge(pod, found, st)
	if sum, err = statusSum(s.cache.seed, merged); err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if (known && sum == last.sum) || (!known && !StatusChanged(found, merged)) {
		return st, nil
	}
	if !known {
		last.shape = unknownShape
	}
	patch, err := ownedStatusPatch(pod.UID, found, merged, last.shape)
	if err != nil {
		return nil, err
	}
	s.beforeWrite(ctx)
	_, err = s.cfg.Client.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return st, nil // the pod is gone (or was recreated): nothing to report
	}
	if err != nil {
		return nil, fmt.Errorf("patch status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	s.cache.reported(pod.UID, statusMark{sum: sum, shape: shapeOf(merged)})
	return st, nil
}

// provided returns the provider's status of pod as the agent reports it
// (after statusFn, with the node's host IP and the pod's QoS class), nil if
// the provider has no record. It may share lists with the provider's: read
// only.
func (s *syncer) provided(ctx context.Context, pod *v1.Pod, statusFn podworkers.StatusFunc) (*v1.PodStatus, error) {
	st, err := s.cfg.Provider.PodStatus(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if st == nil {
		return nil, nil
	}
	// A shallow copy (the provider's lists stay shared and are only read),
	// deep only for statusFn to change.
	out := *st
	if statusFn != nil {
		out = *st.DeepCopy()
		statusFn(&out)
	}
	if ip := s.hostIP(pod.Spec.NodeName); ip != "" {
		out.HostIP, out.HostIPs = ip, []v1.HostIP{{IP: ip}}
	}
	out.QOSClass = pod.Status.QOSClass
	return &out, nil
}

// merge returns the provider's status st merged into found, the API
// server's, as the kubelet merges its own; the provider owns the other
// conditions it reports too.
func (s *syncer) merge(pod *v1.Pod, found, st *v1.PodStatus) *v1.PodStatus {
	withFound := *pod
	withFound.Status = *found
	merged := podstatus.Merge(&withFound, *found, *st, false, metav1.NewTime(s.cfg.Clock.Now()))
	for _, c := range st.Conditions {
		if !podstatus.OwnedByKubelet(c.Type) && c.Type != v1.DisruptionTarget {
			merged.Conditions = podstatus.ReplaceCondition(merged.Conditions, c)
		}
	}
	slices.SortFunc(merged.Conditions, byConditionType)
	return &merged
}

// current returns pod with the status the agent reports for it (the
// provider's merged into the API server's), or pod itself if the provider
// has no record: the kubelet API's view, as the kubelet serves its status
// manager's.
func (s *syncer) current(ctx context.Context, pod *v1.Pod) *v1.Pod {
	st, err := s.provided(ctx, pod, nil)
	if err != nil || st == nil {
		return pod
	}
	p := *pod
	p.Status = *s.merge(pod, &pod.Status, st)
	return &p
}

package criinstrument

import (
	"context"
	"time"

	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeService is a CRI runtime service whose calls are recorded (see
// the package doc); Metrics.Runtime makes one. It is safe for concurrent
// use if the wrapped service is.
type RuntimeService struct {
	rt criapi.RuntimeService
	m  *Metrics
}

var _ criapi.RuntimeService = (*RuntimeService)(nil)

// Unwrap returns the wrapped service.
func (s *RuntimeService) Unwrap() criapi.RuntimeService { return s.rt }

// Version records operation version.
func (s *RuntimeService) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	start := s.m.clock.Now()
	out, err := s.rt.Version(ctx, apiVersion)
	s.m.record("version", start, err)
	return out, err
}

// Status records operation status.
func (s *RuntimeService) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	start := s.m.clock.Now()
	out, err := s.rt.Status(ctx, verbose)
	s.m.record("status", start, err)
	return out, err
}

// CreateContainer records operation create_container.
func (s *RuntimeService) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	start := s.m.clock.Now()
	out, err := s.rt.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
	s.m.record("create_container", start, err)
	return out, err
}

// StartContainer records operation start_container.
func (s *RuntimeService) StartContainer(ctx context.Context, containerID string) error {
	start := s.m.clock.Now()
	err := s.rt.StartContainer(ctx, containerID)
	s.m.record("start_container", start, err)
	return err
}

// StopContainer records operation stop_container.
func (s *RuntimeService) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	start := s.m.clock.Now()
	err := s.rt.StopContainer(ctx, containerID, timeout)
	s.m.record("stop_container", start, err)
	return err
}

// RemoveContainer records operation remove_container.
func (s *RuntimeService) RemoveContainer(ctx context.Context, containerID string) error {
	start := s.m.clock.Now()
	err := s.rt.RemoveContainer(ctx, containerID)
	s.m.record("remove_container", start, err)
	return err
}

// ListContainers records operation list_containers.
func (s *RuntimeService) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	start := s.m.clock.Now()
	out, err := s.rt.ListContainers(ctx, filter)
	s.m.record("list_containers", start, err)
	return out, err
}

// ContainerStatus records operation container_status.
func (s *RuntimeService) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	start := s.m.clock.Now()
	out, err := s.rt.ContainerStatus(ctx, containerID, verbose)
	s.m.record("container_status", start, err)
	return out, err
}

// UpdateContainerResources records operation update_container.
func (s *RuntimeService) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	start := s.m.clock.Now()
	err := s.rt.UpdateContainerResources(ctx, containerID, resources)
	s.m.record("update_container", start, err)
	return err
}

// ReopenContainerLog records operation reopen_container_log.
func (s *RuntimeService) ReopenContainerLog(ctx context.Context, containerID string) error {
	start := s.m.clock.Now()
	err := s.rt.ReopenContainerLog(ctx, containerID)
	s.m.record("reopen_container_log", start, err)
	return err
}

// ExecSync records operation exec_sync.
func (s *RuntimeService) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	start := s.m.clock.Now()
	stdout, stderr, err = s.rt.ExecSync(ctx, containerID, cmd, timeout)
	s.m.record("exec_sync", start, err)
	return stdout, stderr, err
}

// Exec records operation exec.
func (s *RuntimeService) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	start := s.m.clock.Now()
	out, err := s.rt.Exec(ctx, req)
	s.m.record("exec", start, err)
	return out, err
}

// Attach records operation attach.
func (s *RuntimeService) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	start := s.m.clock.Now()
	out, err := s.rt.Attach(ctx, req)
	s.m.record("attach", start, err)
	return out, err
}

// RunPodSandbox records operation run_podsandbox, and the call's duration and error
// under its runtime handler.
func (s *RuntimeService) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	start := s.m.clock.Now()
	out, err := s.rt.RunPodSandbox(ctx, config, runtimeHandler)
	s.m.record("run_podsandbox", start, err)
	s.m.recordSandbox(runtimeHandler, start, err)
	return out, err
}

// StopPodSandbox records operation stop_podsandbox.
func (s *RuntimeService) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	start := s.m.clock.Now()
	err := s.rt.StopPodSandbox(ctx, podSandboxID)
	s.m.record("stop_podsandbox", start, err)
	return err
}

// RemovePodSandbox records operation remove_podsandbox.
func (s *RuntimeService) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	start := s.m.clock.Now()
	err := s.rt.RemovePodSandbox(ctx, podSandboxID)
	s.m.record("remove_podsandbox", start, err)
	return err
}

// PodSandboxStatus records operation podsandbox_status.
func (s *RuntimeService) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	start := s.m.clock.Now()
	out, err := s.rt.PodSandboxStatus(ctx, podSandboxID, verbose)
	s.m.record("podsandbox_status", start, err)
	return out, err
}

// ListPodSandbox records operation list_podsandbox.
func (s *RuntimeService) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	start := s.m.clock.Now()
	out, err := s.rt.ListPodSandbox(ctx, filter)
	s.m.record("list_podsandbox", start, err)
	return out, err
}

// ContainerStats records operation container_stats.
func (s *RuntimeService) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	start := s.m.clock.Now()
	out, err := s.rt.ContainerStats(ctx, containerID)
	s.m.record("container_stats", start, err)
	return out, err
}

// ListContainerStats records operation list_container_stats.
func (s *RuntimeService) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	start := s.m.clock.Now()
	out, err := s.rt.ListContainerStats(ctx, filter)
	s.m.record("list_container_stats", start, err)
	return out, err
}

// PodSandboxStats records operation podsandbox_stats.
func (s *RuntimeService) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	start := s.m.clock.Now()
	out, err := s.rt.PodSandboxStats(ctx, podSandboxID)
	s.m.record("podsandbox_stats", start, err)
	return out, err
}

// ListPodSandboxStats records operation list_podsandbox_stats.
func (s *RuntimeService) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	start := s.m.clock.Now()
	out, err := s.rt.ListPodSandboxStats(ctx, filter)
	s.m.record("list_podsandbox_stats", start, err)
	return out, err
}

// PortForward records operation port_forward.
func (s *RuntimeService) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	start := s.m.clock.Now()
	out, err := s.rt.PortForward(ctx, req)
	s.m.record("port_forward", start, err)
	return out, err
}

// UpdatePodSandboxResources records operation update_podsandbox_resources.
func (s *RuntimeService) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	start := s.m.clock.Now()
	out, err := s.rt.UpdatePodSandboxResources(ctx, req)
	s.m.record("update_podsandbox_resources", start, err)
	return out, err
}

// UpdateRuntimeConfig records operation update_runtime_config.
func (s *RuntimeService) UpdateRuntimeConfig(ctx context.Context, runtimeConfig *runtimeapi.RuntimeConfig) error {
	start := s.m.clock.Now()
	err := s.rt.UpdateRuntimeConfig(ctx, runtimeConfig)
	s.m.record("update_runtime_config", start, err)
	return err
}

// CheckpointContainer records operation checkpoint_container.
func (s *RuntimeService) CheckpointContainer(ctx context.Context, options *runtimeapi.CheckpointContainerRequest) error {
	start := s.m.clock.Now()
	err := s.rt.CheckpointContainer(ctx, options)
	s.m.record("checkpoint_container", start, err)
	return err
}

// GetContainerEvents records operation get_container_events.
func (s *RuntimeService) GetContainerEvents(ctx context.Context, containerEventsCh chan *runtimeapi.ContainerEventResponse, connectionEstablishedCallback func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	start := s.m.clock.Now()
	err := s.rt.GetContainerEvents(ctx, containerEventsCh, connectionEstablishedCallback)
	s.m.record("get_container_events", start, err)
	return err
}

// ListMetricDescriptors records operation list_metric_descriptors.
func (s *RuntimeService) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	start := s.m.clock.Now()
	out, err := s.rt.ListMetricDescriptors(ctx)
	s.m.record("list_metric_descriptors", start, err)
	return out, err
}

// ListPodSandboxMetrics records operation list_podsandbox_metrics.
func (s *RuntimeService) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	start := s.m.clock.Now()
	out, err := s.rt.ListPodSandboxMetrics(ctx)
	s.m.record("list_podsandbox_metrics", start, err)
	return out, err
}

// RuntimeConfig records operation runtime_config.
func (s *RuntimeService) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	start := s.m.clock.Now()
	out, err := s.rt.RuntimeConfig(ctx)
	s.m.record("runtime_config", start, err)
	return out, err
}

// Close records operation close.
func (s *RuntimeService) Close(ctx context.Context) error {
	start := s.m.clock.Now()
	err := s.rt.Close(ctx)
	s.m.record("close", start, err)
	return err
}

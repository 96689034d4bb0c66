package sidebyside

import (
	"context"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
)

// upstreamRuntime is the part of kubelet's kuberuntime manager that
// GenericPLEG uses (GetPods, GetPodStatus), making the same CRI calls in the
// same order: GetPods lists all sandboxes and all containers; GetPodStatus
// asks PodSandboxStatus for each sandbox of the pod, then ContainerStatus
// for each of its containers, one after the other. Conversions keep only
// what the PLEG reads. Building the real kubeGenericRuntimeManager needs
// ~30 collaborators; this model keeps its request pattern, which dominates.
type upstreamRuntime struct {
	kubecontainer.Runtime // not called: GenericPLEG uses the two methods below
	rt                    criapi.RuntimeService
}

const podUIDLabel = "io.kubernetes.pod.uid"

func (u *upstreamRuntime) GetPods(ctx context.Context, all bool) ([]*kubecontainer.Pod, error) {
	now := time.Now()
	sbs, err := u.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	pods := map[types.UID]*kubecontainer.Pod{}
	sort.Slice(sbs, func(i, j int) bool { return sbs[i].CreatedAt > sbs[j].CreatedAt })
	for _, s := range sbs {
		uid := types.UID(s.Metadata.Uid)
		p := pods[uid]
		if p == nil {
			p = &kubecontainer.Pod{ID: uid, Name: s.Metadata.Name, Namespace: s.Metadata.Namespace, Timestamp: now}
			pods[uid] = p
		}
		p.Sandboxes = append(p.Sandboxes, &kubecontainer.Container{ID: kubecontainer.ContainerID{Type: "crisim", ID: s.Id},
			State: kubecontainer.SandboxToContainerState(s.State), PodSandboxID: s.Id, CreatedAt: s.CreatedAt})
		p.CreatedAt = uint64(s.CreatedAt)
	}
	cs, err := u.rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].CreatedAt > cs[j].CreatedAt })
	for _, c := range cs {
		uid := types.UID(c.Labels[podUIDLabel])
		p := pods[uid]
		if p == nil {
			p = &kubecontainer.Pod{ID: uid, Timestamp: now}
			pods[uid] = p
		}
		p.Containers = append(p.Containers, &kubecontainer.Container{ID: kubecontainer.ContainerID{Type: "crisim", ID: c.Id},
			Name: c.Metadata.Name, Image: c.Image.Image, ImageRef: c.ImageRef,
			State: toState(c.State), PodSandboxID: c.PodSandboxId, CreatedAt: c.CreatedAt})
	}
	out := make([]*kubecontainer.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	return out, nil
}

func toState(s runtimeapi.ContainerState) kubecontainer.State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return kubecontainer.ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return kubecontainer.ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return kubecontainer.ContainerStateExited
	}
	return kubecontainer.ContainerStateUnknown
}

func (u *upstreamRuntime) GetPodStatus(ctx context.Context, pod *kubecontainer.Pod) (*kubecontainer.PodStatus, error) {
	st := &kubecontainer.PodStatus{ID: pod.ID, Name: pod.Name, Namespace: pod.Namespace, TimeStamp: pod.Timestamp}
	for _, s := range pod.Sandboxes {
		resp, err := u.rt.PodSandboxStatus(ctx, s.ID.ID, false)
		if err != nil {
			return nil, err
		}
		st.SandboxStatuses = append(st.SandboxStatuses, resp.Status)
		if ip := resp.GetStatus().GetNetwork().GetIp(); ip != "" && len(st.IPs) == 0 {
			st.IPs = []string{ip}
		}
	}
	for _, c := range pod.Containers {
		resp, err := u.rt.ContainerStatus(ctx, c.ID.ID, false)
		if err != nil {
			return nil, err
		}
		s := resp.GetStatus()
		st.ContainerStatuses = append(st.ContainerStatuses, &kubecontainer.Status{ID: c.ID, Name: s.Metadata.Name,
			State: toState(s.State), CreatedAt: time.Unix(0, s.CreatedAt), StartedAt: time.Unix(0, s.StartedAt),
			FinishedAt: time.Unix(0, s.FinishedAt), ExitCode: int(s.ExitCode), Image: s.Image.GetImage(), ImageRef: s.ImageRef})
	}
	return st, nil
}

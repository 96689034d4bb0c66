package podsyncer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/clockctx"
	"github.com/nodekit/nodekit/kubetypes"
)

// minimumGracePeriod is what a container gets to stop after its preStop
// hook used up the grace period, as the kubelet (seconds).
const minimumGracePeriod = 2

// runHook runs a postStart or preStop handler against container id of
// pod: exec in the container, an HTTP GET (the pod's IP by default), or a
// sleep on the agent's clock. timeout 0 means none. It returns a message
// for the agent's log on failure.
func (s *Syncer) runHook(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, h *v1.LifecycleHandler, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = clockctx.WithTimeout(ctx, s.clock, timeout)
		defer cancel()
	}
	switch {
	case h.Exec != nil:
		stdout, stderr, err := s.rt.ExecSync(ctx, id, h.Exec.Command, timeout)
		if err != nil {
			//lint:ignore ST1005 the kubelet's wording, which logs and tests match
			return fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, klog.KObj(pod), err, string(stdout)+string(stderr))
		}
		return nil
	case h.HTTPGet != nil:
		if err := s.hookHTTP(ctx, pod, c, h.HTTPGet); err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, klog.KObj(pod), err)
		}
		return nil
	case h.Sleep != nil:
		t := s.clock.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-t.C():
			return nil
		case <-ctx.Done():
			//lint:ignore ST1005 the kubelet's wording, which logs and tests match
			return fmt.Errorf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v", h.Sleep.Seconds, c.Name, klog.KObj(pod), ctx.Err())
		}
	}
	return fmt.Errorf("invalid handler: %v", h)
}

// hookHTTP sends the hook's GET; any status below 400 is success. HTTPS
// is not verified, as the kubelet's hooks and probes.
func (s *Syncer) hookHTTP(ctx context.Context, pod *v1.Pod, c *v1.Container, a *v1.HTTPGetAction) error {
	host := a.Host
	if host == "" {
		host = s.podIP(ctx, pod)
		if host == "" {
			return errors.New("the pod has no IP address")
		}
	}
	port, err := resolvePort(a.Port, c)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(a.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := a.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	if p, q, ok := strings.Cut(path, "?"); ok {
		u.Path, u.RawQuery = p, q
	} else {
		u.Path = path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, h := range a.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "kube-lifecycle/1.36")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true} //nolint:gosec // as the kubelet
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	if resp.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	return nil
}

// podIP is the pod's address: the node's for host-network pods, else its
// sandbox's.
func (s *Syncer) podIP(ctx context.Context, pod *v1.Pod) string {
	if pod.Spec.HostNetwork {
		if ips := s.hostIPs(); len(ips) > 0 {
			return ips[0]
		}
	}
	rtp, err := s.runtimeState(ctx, pod.UID, false)
	if err != nil {
		return ""
	}
	if ips := sortPodIPs(rtp.sandboxIPs, s.hostIPs()); len(ips) > 0 {
		return ips[0]
	}
	return ""
}

// resolvePort turns a number or a named container port into a number.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port: %v in %v", p, c.Ports)
}

// postStart runs the container's postStart hook, if any; on failure the
// container is killed (the kubelet's FailedPostStartHook).
func (s *Syncer) postStart(ctx context.Context, pod *v1.Pod, c *v1.Container, id string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	err := s.runHook(ctx, pod, c, id, c.Lifecycle.PostStart, 0)
	if err == nil {
		return nil
	}
	klog.FromContext(ctx).Error(err, "Failed to execute PostStartHook", "pod", klog.KObj(pod), "containerName", c.Name, "containerID", id)
	// The message stays out of the event: it may hold secrets.
	s.containerEvent(pod, c, v1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	if kerr := s.rt.StopContainer(ctx, id, gracePeriod(pod)); kerr != nil {
		klog.FromContext(ctx).Error(kerr, "Failed to kill container", "pod", klog.KObj(pod), "containerName", c.Name)
	}
	return fmt.Errorf("container %s: PostStartHook failed", c.Name)
}

// killContainer stops a running container: its preStop hook first
// (within the grace period, whose remainder — at least 2s — is then the
// runtime's), then StopContainer.
func (s *Syncer) killContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, grace int64) error {
	if c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		start := s.clock.Now()
		done := make(chan error, 1)
		hookCtx, cancel := context.WithCancel(ctx)
		go func() { done <- s.runHook(hookCtx, pod, c, id, c.Lifecycle.PreStop, time.Duration(grace)*time.Second) }()
		t := s.clock.NewTimer(time.Duration(grace) * time.Second)
		select {
		case err := <-done:
			if err != nil {
				klog.FromContext(ctx).Error(err, "PreStop hook failed", "pod", klog.KObj(pod), "containerName", c.Name, "containerID", id)
				s.containerEvent(pod, c, v1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
			}
		case <-t.C():
			klog.FromContext(ctx).V(2).Info("PreStop hook not completed in grace period", "pod", klog.KObj(pod), "containerName", c.Name, "gracePeriod", grace)
		}
		t.Stop()
		cancel()
		grace = max(grace-int64(s.clock.Since(start).Seconds()), minimumGracePeriod)
	}
	return s.rt.StopContainer(ctx, id, grace)
}

// stopAll stops the pod's running containers and then its sandboxes, as
// the kubelet terminates a pod: app and ephemeral containers together
// (each running its preStop hook), then sidecars one by one in reverse
// order, each with what remains of the grace period. pod is nil for a
// runtime pod without spec: then all stop together, without hooks.
func (s *Syncer) stopAll(ctx context.Context, pod *v1.Pod, rtp *podRuntime, grace int64) error {
	start := s.clock.Now()
	var first, sidecars []*runtimeapi.ContainerStatus
	for _, st := range rtp.containers {
		if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING && st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			continue
		}
		if pod != nil && isSidecarOf(pod, st.GetMetadata().GetName()) {
			sidecars = append(sidecars, st)
		} else {
			first = append(first, st)
		}
	}
	kill := func(sts []*runtimeapi.ContainerStatus, grace int64) error {
		var wg sync.WaitGroup
		errs := make([]error, len(sts))
		for i, st := range sts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var c *v1.Container
				if pod != nil {
					c = specOf(pod, st.GetMetadata().GetName())
				}
				errs[i] = s.killContainer(ctx, pod, c, st.Id, grace)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := kill(first, grace); err != nil {
		return fmt.Errorf("stop containers: %w", err)
	}
	if len(sidecars) > 0 {
		order := map[string]int{}
		for i := range pod.Spec.InitContainers {
			order[pod.Spec.InitContainers[i].Name] = i
		}
		slices.SortFunc(sidecars, func(a, b *runtimeapi.ContainerStatus) int {
			return order[b.GetMetadata().GetName()] - order[a.GetMetadata().GetName()]
		})
		for _, st := range sidecars {
			left := max(grace-int64(s.clock.Since(start).Seconds()), minimumGracePeriod)
			if err := kill([]*runtimeapi.ContainerStatus{st}, left); err != nil {
				return fmt.Errorf("stop containers: %w", err)
			}
		}
	}
	for _, sb := range rtp.sandboxes {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			if err := s.rt.StopPodSandbox(ctx, sb.Id); err != nil {
				return fmt.Errorf("stop pod sandbox: %w", err)
			}
		}
	}
	return nil
}

func isSidecarOf(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return kubetypes.IsSidecar(&pod.Spec.InitContainers[i])
		}
	}
	return false
}

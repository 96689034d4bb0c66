package podsyncer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/record"

	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/cgroups"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/podenv"
	"github.com/nodekit/nodekit/podsyncer/images"
	"github.com/nodekit/nodekit/podsyncer/podnet"
	"github.com/nodekit/nodekit/podsyncer/podplan"
	"github.com/nodekit/nodekit/podworkers"
)

// CrashLoopBackOff bounds of the kubelet.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 5 * time.Minute
)

// crashBackoff tracks the restart delay of each container (pod UID, name
// and spec hash) as the kubelet does, with client-go's keyed back-off: the
// delay counts from the exit of the container's latest instance, and
// doubles with every restart.
type crashBackoff struct{ b *flowcontrol.Backoff }

func newCrashBackoff(clk clock.Clock) *crashBackoff {
	return &crashBackoff{b: flowcontrol.NewFakeBackOff(backoffInitial, backoffMax, clk)}
}

// inBackoff reports whether a container whose latest instance exited at
// finished must still wait before its restart, and until when.
func (b *crashBackoff) inBackoff(key string, finished time.Time) (bool, time.Time) {
	if !b.b.IsInBackOffSince(key, finished) {
		return false, time.Time{}
	}
	return true, finished.Add(b.b.Get(key))
}

// next records a restart after the exit at finished: the following exit
// waits twice as long (up to the maximum), or the initial delay when the
// last counted exit is long past.
func (b *crashBackoff) next(key string, finished time.Time) { b.b.Next(key, finished) }

// gc forgets the containers whose last exit is long past, those of
// deleted pods among them (the kubelet's housekeeping does the same).
func (b *crashBackoff) gc() { b.b.GC() }

// sandboxConfig is the pod's CRI sandbox config: identity, hostname, DNS,
// namespaces, log directory. warn reports DNS problems as events (on
// creation only, not on every container start).
func (s *Syncer) sandboxConfig(ctx context.Context, pod *v1.Pod, handler string, attempt uint32, warn bool) (*runtimeapi.PodSandboxConfig, error) {
	userns, err := s.userNamespace(ctx, pod, handler)
	if err != nil {
		return nil, err
	}
	host, domain, err := s.net.HostnameAndDomain(pod)
	if err != nil {
		return nil, err
	}
	if !pod.Spec.HostNetwork {
		if host, err = podnet.SandboxHostname(pod, host, domain); err != nil {
			return nil, err
		}
	}
	dns, warnings, err := s.net.DNS(pod)
	if err != nil {
		return nil, err
	}
	if warn {
		for _, w := range warnings {
			s.event(pod, v1.EventTypeWarning, w.Reason, "%s", w.Message)
		}
	}
	cfg := sandboxConfig(pod, attempt, s.logsDir)
	cfg.Linux.SecurityContext = s.sandboxSecurity(pod)
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = userns
	if psc := pod.Spec.SecurityContext; psc != nil && len(psc.Sysctls) > 0 {
		cfg.Linux.Sysctls = map[string]string{}
		for _, sc := range psc.Sysctls {
			cfg.Linux.Sysctls[utilsysctl.NormalizeName(sc.Name)] = sc.Value // "kernel/shm_rmid_forced" too
		}
	}
	if s.cgroups != nil {
		cfg.Linux.CgroupParent = s.cgroups.PodCgroup(pod)
		cfg.Linux.Resources, cfg.Linux.Overhead = sandboxResources(pod)
	}
	cfg.DnsConfig = dns
	cfg.Hostname = host
	if pod.Spec.HostNetwork {
		cfg.Hostname = "" // the node's
	}
	return cfg, nil
}

// hostsMount writes the pod's kubelet-managed /etc/hosts and returns its
// mount for c; nil when the container mounts its own /etc/hosts or the
// pod has no address yet.
func (s *Syncer) hostsMount(pod *v1.Pod, c *v1.Container, podIPs []string) (*runtimeapi.Mount, error) {
	if len(podIPs) == 0 && !pod.Spec.HostNetwork {
		return nil, nil
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/etc/hosts" {
			return nil, nil
		}
	}
	host, domain, err := s.net.HostnameAndDomain(pod)
	if err != nil {
		return nil, err
	}
	var node []byte
	if pod.Spec.HostNetwork {
		if node, err = os.ReadFile(s.nodeHostsFile); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(s.volumes.PodDir(pod.UID), "etc-hosts")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, podnet.HostsFile(pod, podIPs, host, domain, node), 0o644); err != nil {
		return nil, err
	}
	return &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: path, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}, nil
}

// errCrashLoopBackOff marks a sync that waits for a container's backoff.
var errCrashLoopBackOff = errors.New("CrashLoopBackOff")

// containerEvent records an event about container c of pod, with the
// container's field path as the kubelet sets it (spec.containers{name}).
func (s *Syncer) containerEvent(pod *v1.Pod, c *v1.Container, typ, reason, format string, args ...any) {
	containerEvent(s.recorder, pod, c, typ, reason, format, args...)
}

func containerEvent(rec record.EventRecorder, pod *v1.Pod, c *v1.Container, typ, reason, format string, args ...any) {
	if rec == nil {
		return
	}
	ref := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion, FieldPath: containerFieldPath(pod, c.Name)}
	rec.Eventf(ref, typ, reason, format, args...)
}

func containerFieldPath(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return "spec.ephemeralContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}

func (s *Syncer) event(pod *v1.Pod, typ, reason, format string, args ...any) {
	if s.recorder != nil {
		s.recorder.Eventf(pod, typ, reason, format, args...)
	}
}

// SyncPod implements podworkers.Syncer: one pass of the pod's action plan
// (volumes and cgroup first, then sandbox and containers), after which
// its status is set. It reports true once the pod finished for good.
func (s *Syncer) SyncPod(ctx context.Context, _ podworkers.UpdateType, pod, _ *v1.Pod) (_ bool, retErr error) {
	rtp, err := s.runtimeState(ctx, pod.UID, false)
	if err != nil {
		return false, err
	}
	if s.pastDeadline(pod) {
		msg := "Pod was active on the node longer than the specified deadline"
		s.event(pod, v1.EventTypeNormal, "DeadlineExceeded", "%s", msg)
		s.status.write(ctx, pod, rtp, func(st *v1.PodStatus) {
			st.Phase, st.Reason, st.Message = v1.PodFailed, "DeadlineExceeded", msg
		}, false)
		return true, nil // the pod worker stops its containers
	}
	pod = s.allocate(ctx, pod)
	s.observeInitExits(pod, rtp)
	plan := s.plan(pod, rtp)
	if plan.Done {
		// Finished for good: the pod worker terminates what still runs
		// (sidecars) through SyncTerminatingPod.
		s.status.write(ctx, pod, rtp, nil, false)
		return true, nil
	}
	// Volumes first, on every sync of a pod that still runs something:
	// this is also how their contents follow configMap, secret, label and
	// token changes. Only a volume never set up holds the pod back.
	if s.objects != nil {
		s.objects.Register(ctx, pod)
	}
	if err := s.ensurePodCgroup(ctx, pod); err != nil {
		s.status.write(ctx, pod, rtp, nil, false)
		return false, err
	}
	if err := s.volumes.SetUpPod(ctx, pod); err != nil {
		s.status.write(ctx, pod, rtp, nil, false)
		return false, err
	}
	if plan.KillPod {
		if err := s.stopAll(ctx, pod, rtp, gracePeriod(pod)); err != nil {
			return false, err
		}
	}
	if plan.CreateSandbox {
		s.metrics.startedPods.Inc()
		if usesUserNamespace(pod) {
			// Counted as the kubelet does: one start, and one error if
			// anything of this sync fails.
			s.metrics.startedUserNS.Inc()
			defer func() {
				if retErr != nil {
					s.metrics.startedUserNSErrors.Inc()
				}
			}()
		}
		if err := s.createSandbox(ctx, pod, plan.Attempt); err != nil {
			s.metrics.startedPodsErrors.Inc()
			s.status.write(ctx, pod, rtp, nil, false) // Pending, its containers waiting
			return false, err
		}
		if rtp, err = s.runtimeState(ctx, pod.UID, true); err != nil {
			return false, err
		}
		plan = s.plan(pod, rtp)
	}
	if err := s.prepareResize(ctx, pod); err != nil {
		klog.FromContext(ctx).Error(err, "Prepare the pod cgroup for a resize", "pod", klog.KObj(pod))
	}
	if len(plan.Reset) > 0 {
		// The status records the exit that resets the pod while its
		// instances are still there to read it from.
		s.status.write(ctx, pod, rtp, nil, false)
	}
	syncErr := s.execute(ctx, pod, rtp, plan)
	if plan.Acts() {
		// Read back what the plan did; a pod left alone (every periodic
		// sync of a running pod) keeps the state the PLEG cache gave.
		if rtp, err = s.runtimeState(ctx, pod.UID, true); err != nil {
			return false, err
		}
	}
	if len(plan.Reset) > 0 && syncErr == nil {
		// Every container is gone: the status says so (each waits with
		// reason RestartingAllContainers), then the pod starts over at
		// once, as the kubelet syncs it again right after a reset.
		s.status.write(ctx, pod, rtp, nil, false)
		plan = s.plan(pod, rtp)
		syncErr = s.execute(ctx, pod, rtp, plan)
		if plan.Acts() {
			if rtp, err = s.runtimeState(ctx, pod.UID, true); err != nil {
				return false, err
			}
		}
	}
	s.actuateResize(ctx, pod, rtp)
	s.status.write(ctx, pod, rtp, nil, false)
	return s.plan(pod, rtp).Done, syncErr
}

// ensurePodCgroup creates the pod's cgroup before anything of it runs; the
// QoS tiers are resized first for the pod that joins them.
func (s *Syncer) ensurePodCgroup(ctx context.Context, pod *v1.Pod) error {
	if s.cgroups == nil || s.cgroups.PodExists(pod) {
		return nil
	}
	if s.activePods != nil {
		if err := s.cgroups.UpdateQoS(ctx, s.activePods()); err != nil {
			klog.FromContext(ctx).Error(err, "Update QoS cgroups")
		}
	}
	if err := s.cgroups.EnsurePod(ctx, pod); err != nil {
		s.event(pod, v1.EventTypeWarning, "FailedCreatePodContainer", "unable to ensure pod container exists: %v", err)
		return fmt.Errorf("failed to ensure that the pod: %v cgroups exist and are correctly applied: %w", pod.UID, err)
	}
	if s.alloc != nil {
		s.alloc.SetPodActuated(pod.UID, pod.Spec.Resources)
	}
	return nil
}

// pastDeadline: the pod has run longer than its activeDeadlineSeconds,
// counted from its start time on this node.
func (s *Syncer) pastDeadline(pod *v1.Pod) bool {
	d := pod.Spec.ActiveDeadlineSeconds
	if d == nil {
		return false
	}
	start := s.status.startTime(pod)
	return start != nil && s.clock.Since(start.Time) >= time.Duration(*d)*time.Second
}

// plan computes what the pod needs from its runtime state and the
// prober's results.
func (s *Syncer) plan(pod *v1.Pod, rtp *podRuntime) podplan.Plan {
	in := podplan.Input{Pod: pod, Sandboxes: len(rtp.sandboxes), SandboxReady: rtp.readySandbox() != nil,
		Containers: map[string]podplan.Container{}, Hash: containerHash}
	earlier := func(st *runtimeapi.ContainerStatus) {
		if in.Earlier == nil {
			in.Earlier = map[string][]podplan.Container{}
		}
		name := st.GetMetadata().GetName()
		in.Earlier[name] = append(in.Earlier[name], podplan.Container{ID: st.Id, State: planState(st.State), ExitCode: st.ExitCode})
	}
	for _, st := range rtp.containers {
		name := st.GetMetadata().GetName()
		if _, ok := in.Containers[name]; ok {
			earlier(st)
			continue
		}
		c := podplan.Container{ID: st.Id, State: planState(st.State), ExitCode: st.ExitCode, Hash: st.Annotations[annotationHash]}
		switch c.State {
		case podplan.Running:
			if s.probes != nil {
				c.Started, c.LivenessFailed, c.StartupFailed = s.probes.ContainerState(pod, name, st.Id)
			} else {
				c.Started = true
			}
			if s.alloc != nil {
				if act, ok := s.alloc.Actuated(pod.UID, st.Id); ok {
					if spec := specOf(pod, name); spec != nil {
						c.ResizeRestart = resizeNeedsRestart(spec, act, effectiveResources(pod, spec))
					}
				}
			}
		}
		in.Containers[name] = c
	}
	for _, st := range rtp.older {
		earlier(st)
	}
	return podplan.Compute(in)
}

func planState(st runtimeapi.ContainerState) podplan.State {
	switch st {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return podplan.Created
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return podplan.Running
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return podplan.Exited
	}
	return podplan.Unknown
}

// execute kills and starts containers as the plan says. Starting stops at
// the first failed init container or sidecar (the next ones wait for it);
// app containers are independent.
func (s *Syncer) execute(ctx context.Context, pod *v1.Pod, rtp *podRuntime, plan podplan.Plan) error {
	sb := rtp.readySandbox()
	if sb == nil {
		return nil
	}
	for _, r := range plan.Reset {
		c := specOf(pod, r.Name)
		if r.Kill {
			klog.FromContext(ctx).V(3).Info("Killing container before the pod restarts all its containers", "pod", klog.KObj(pod), "container", r.Name, "containerID", r.ID)
			s.containerEvent(pod, c, v1.EventTypeNormal, "Killing", "Stopping container %s: the pod restarts all its containers", r.Name)
			if err := s.killContainer(ctx, pod, c, r.ID, 0); err != nil {
				return fmt.Errorf("stop container %s before the pod restarts all its containers: %w", r.Name, err)
			}
		}
		if err := s.rt.RemoveContainer(ctx, r.ID); err != nil {
			return fmt.Errorf("remove container %s before the pod restarts all its containers: %w", r.Name, err)
		}
	}
	killed := map[string]bool{}
	for _, k := range plan.Kill {
		c := specOf(pod, k.Name)
		klog.FromContext(ctx).Info("Restarting container", "pod", klog.KObj(pod), "container", k.Name, "reason", k.Reason)
		s.containerEvent(pod, c, v1.EventTypeNormal, "Killing", "Container %s %s, will be restarted", k.Name, k.Reason)
		if err := s.killContainer(ctx, pod, c, k.ID, killGrace(pod, c, k.Reason)); err != nil {
			return fmt.Errorf("stop container %s: %w", k.Name, err)
		}
		killed[k.Name] = true
	}
	var errs []error
	for _, st := range plan.Start {
		c := st.Container
		attempt := rtp.nextAttempt(c.Name)
		if attempt == 0 {
			// No instance left in the runtime: count the earlier ones by
			// their log files, as the kubelet does.
			attempt = attemptsInLogDir(filepath.Join(PodLogDir(s.logsDir, pod), c.Name))
		}
		if last := rtp.latest(c.Name); last != nil {
			if !killed[c.Name] {
				if err := s.crashBackoff(pod, c, last); err != nil {
					errs = append(errs, err)
					if st.Kind != podplan.App {
						break
					}
					continue
				}
			}
		}
		s.metrics.startedContainers.WithLabelValues(containerType(st.Kind)).Inc()
		if err := s.start(ctx, pod, sb, c, attempt); err != nil {
			code := "Unknown"
			if w, ok := s.status.startError(pod.UID, c.Name); ok {
				code = w.Reason // the kubelet's well-known start errors
			}
			s.metrics.startedCtrsErrors.WithLabelValues(containerType(st.Kind), code).Inc()
			errs = append(errs, err)
			if st.Kind == podplan.Init || st.Kind == podplan.Sidecar {
				break
			}
			continue
		}
		if st.Kind == podplan.Init && s.initObserver != nil {
			s.initObserver.InitContainerStarted(pod.UID, s.clock.Now())
		}
	}
	return errors.Join(errs...)
}

// observeInitExits reports the exits of the pod's regular init containers
// to Config.InitContainers.
func (s *Syncer) observeInitExits(pod *v1.Pod, rtp *podRuntime) {
	if s.initObserver == nil {
		return
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if kubetypes.IsSidecar(c) {
			continue
		}
		if st := rtp.latest(c.Name); st != nil && st.State == runtimeapi.ContainerState_CONTAINER_EXITED && st.FinishedAt != 0 {
			s.initObserver.InitContainerFinished(pod.UID, time.Unix(0, st.FinishedAt))
		}
	}
}

// crashBackoff holds back the restart of an exited container while its
// CrashLoopBackOff lasts, and records the restart otherwise.
func (s *Syncer) crashBackoff(pod *v1.Pod, c *v1.Container, last *runtimeapi.ContainerStatus) error {
	key := backoffKey(pod, c)
	finished := time.Unix(0, last.FinishedAt)
	if last.FinishedAt == 0 { // never ran (its start failed): from its creation
		finished = time.Unix(0, last.CreatedAt)
	}
	if wait, until := s.backoff.inBackoff(key, finished); wait {
		// An error makes the pod worker retry after its backoff (10s),
		// as the kubelet's CrashLoopBackOff does.
		s.containerEvent(pod, c, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, klog.KObj(pod))
		if _, failed := s.status.startError(pod.UID, c.Name); failed {
			// The back-off is now why it waits, as the kubelet's reason
			// cache records the latest failure.
			s.status.startFailed(pod.UID, c.Name, "CrashLoopBackOff", fmt.Sprintf("back-off restarting failed container %s in pod %s", c.Name, klog.KObj(pod)))
		}
		return fmt.Errorf("%w: back-off %s restarting failed container=%s pod=%s",
			errCrashLoopBackOff, until.Sub(s.clock.Now()).Round(time.Second), c.Name, klog.KObj(pod))
	}
	s.backoff.next(key, finished)
	return nil
}

// killGrace is the grace period of a container killed for reason: a
// failed probe's own terminationGracePeriodSeconds when it sets one, else
// the pod's.
func killGrace(pod *v1.Pod, c *v1.Container, reason string) int64 {
	var p *v1.Probe
	switch reason {
	case podplan.ReasonLiveness:
		p = c.LivenessProbe
	case podplan.ReasonStartup:
		p = c.StartupProbe
	}
	if p != nil && p.TerminationGracePeriodSeconds != nil {
		return *p.TerminationGracePeriodSeconds
	}
	return gracePeriod(pod)
}

// ephemeralTarget is the targetContainerName of the named ephemeral
// container; "" for other containers.
func ephemeralTarget(pod *v1.Pod, name string) string {
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return pod.Spec.EphemeralContainers[i].TargetContainerName
		}
	}
	return ""
}

// backoffKey keys a container's CrashLoopBackOff: pod, name and spec
// hash, so that a changed spec (a new image) starts without the old delay,
// as the kubelet's.
func backoffKey(pod *v1.Pod, c *v1.Container) string {
	return string(pod.UID) + "/" + c.Name + "/" + containerHash(c)
}

// specOf finds a container of the pod by name: app, init or ephemeral.
func specOf(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return &v1.Container{Name: name}
}

func (s *Syncer) createSandbox(ctx context.Context, pod *v1.Pod, attempt uint32) error {
	handler, err := s.podHandler(ctx, pod)
	var cfg *runtimeapi.PodSandboxConfig
	if err == nil {
		cfg, err = s.sandboxConfig(ctx, pod, handler, attempt, true)
	}
	if err != nil {
		s.event(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return fmt.Errorf("create pod sandbox: %w", err)
	}
	if err := os.MkdirAll(cfg.LogDirectory, 0o750); err != nil {
		return fmt.Errorf("pod log directory: %w", err)
	}
	id, err := s.rt.RunPodSandbox(ctx, cfg, handler)
	if err != nil {
		s.event(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return fmt.Errorf("create pod sandbox: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Started pod sandbox", "pod", klog.KObj(pod), "sandbox", id)
	return nil
}

func (s *Syncer) start(ctx context.Context, pod *v1.Pod, sb *runtimeapi.PodSandbox, c *v1.Container, attempt uint32) error {
	handler, err := s.sandboxHandler(ctx, pod, sb)
	if err != nil {
		return err
	}
	sbCfg, err := s.sandboxConfig(ctx, pod, handler, sb.Metadata.Attempt, false)
	if err != nil {
		return err
	}
	if err := s.ensureImage(ctx, pod, c, sbCfg); err != nil {
		return err
	}
	cfg, err := s.containerConfig(ctx, pod, sb, handler, sbCfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions, c, attempt)
	if err == nil {
		err = s.checkNonRoot(ctx, pod, c)
	}
	if err == nil && s.beforeCreate != nil {
		err = s.beforeCreate(pod, c)
	}
	if err != nil {
		s.status.startFailed(pod.UID, c.Name, "CreateContainerConfigError", err.Error())
		s.containerEvent(pod, c, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return fmt.Errorf("container %s: %w", c.Name, err)
	}
	id, err := s.rt.CreateContainer(ctx, sb.Id, cfg, sbCfg)
	if err != nil {
		msg := grpcstatus.Convert(err).Message() // without the rpc error prefix
		s.status.startFailed(pod.UID, c.Name, "CreateContainerError", msg)
		s.containerEvent(pod, c, v1.EventTypeWarning, "Failed", "Error: %s", msg)
		return fmt.Errorf("create container %s: %w", c.Name, err)
	}
	s.status.startFailed(pod.UID, c.Name, "", "")
	if s.alloc != nil {
		s.alloc.SetActuated(pod.UID, id, effectiveResources(pod, c))
	}
	s.containerEvent(pod, c, v1.EventTypeNormal, "Created", "Container created")
	// A start the runtime has begun is let finish even when the sync is
	// cancelled (the pod is being deleted): the container is then stopped
	// as any other, rather than left "failed to start: context canceled"
	// (exit 128, StartError) in the pod's final status. The runtime
	// client's own timeout still bounds the call.
	if err := s.rt.StartContainer(context.WithoutCancel(ctx), id); err != nil {
		msg := grpcstatus.Convert(err).Message()
		s.status.startFailed(pod.UID, c.Name, "RunContainerError", msg)
		s.containerEvent(pod, c, v1.EventTypeWarning, "Failed", "Error: %s", msg)
		return fmt.Errorf("start container %s: %w", c.Name, err)
	}
	s.containerEvent(pod, c, v1.EventTypeNormal, "Started", "Container started")
	return s.postStart(ctx, pod, c, id)
}

// containerConfig is the CRI config of c: its environment resolved,
// command and args expanded with it, its volume mounts.
func (s *Syncer) containerConfig(ctx context.Context, pod *v1.Pod, sb *runtimeapi.PodSandbox, handler string, userns *runtimeapi.UserNamespace,
	c *v1.Container, attempt uint32) (*runtimeapi.ContainerConfig, error) {
	var podIPs []string
	if st, err := s.rt.PodSandboxStatus(ctx, sb.Id, false); err == nil {
		podIPs = sortPodIPs(pleg.SandboxIPs(st.GetStatus()), s.hostIPs())
	}
	ep := s.envPod(pod, podIPs)
	ep.Static = kubetypes.IsStatic(pod)
	vars, err := podenv.Build(ctx, ep, c)
	if err != nil {
		return nil, err
	}
	mounts, err := s.volumes.ContainerMounts(ctx, pod, c, vars)
	if err != nil {
		return nil, err
	}
	if err := applyRecursiveReadOnly(c, mounts, s.recursiveReadOnly(handler)); err != nil {
		return nil, err
	}
	hosts, err := s.hostsMount(pod, c, podIPs)
	if err != nil {
		return nil, err
	}
	if hosts != nil {
		mounts = append(mounts, hosts)
	}
	term, err := s.terminationMessageMount(pod, c)
	if err != nil {
		return nil, err
	}
	if term != nil {
		mounts = append(mounts, term)
	}
	cfg := containerConfig(pod, c, attempt)
	cfg.Linux.SecurityContext = s.containerSecurity(pod, c)
	if target := ephemeralTarget(pod, c.Name); target != "" {
		// kubectl debug --target: the process namespace of that container.
		cs, err := s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb.Id,
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{labelContainerName: target}})
		if err != nil || len(cs) == 0 {
			return nil, fmt.Errorf("target container %q is not running", target)
		}
		cfg.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		cfg.Linux.SecurityContext.NamespaceOptions.TargetId = cs[0].Id
	}
	cfg.Linux.Resources = containerResources(pod, c, cgroups.QOSClass(pod), s.memoryCapacity())
	cfg.Envs = keyValues(vars)
	cfg.Command = podenv.ExpandAll(c.Command, vars)
	cfg.Args = podenv.ExpandAll(c.Args, vars)
	if userns != nil {
		// The pod's user namespace, and idmapped mounts in it, as the
		// kubelet sets them on every container.
		cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = userns
		for _, m := range mounts {
			m.UidMappings, m.GidMappings = userns.GetUids(), userns.GetGids()
		}
	}
	cfg.Mounts = mounts
	return cfg, nil
}

// checkNonRoot applies runAsNonRoot against the image's user.
func (s *Syncer) checkNonRoot(ctx context.Context, pod *v1.Pod, c *v1.Container) error {
	eff := effectiveSecurity(pod, c)
	if eff.RunAsNonRoot == nil || !*eff.RunAsNonRoot || eff.RunAsUser != nil {
		return verifyRunAsNonRoot(pod, c, nil, "")
	}
	st, err := s.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image}, false)
	if err != nil {
		return fmt.Errorf("image status of %s: %w", c.Image, err)
	}
	var uid *int64
	if u := st.GetImage().GetUid(); u != nil {
		uid = &u.Value
	}
	return verifyRunAsNonRoot(pod, c, uid, st.GetImage().GetUsername())
}

// ensureImage makes the container's image present as its pull policy
// says, with the pod's pull secrets; a failure sets the container's
// waiting reason (ErrImagePull, ImagePullBackOff, ErrImageNeverPull).
func (s *Syncer) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandbox *runtimeapi.PodSandboxConfig) error {
	_, err := s.pull.ensure(ctx, pod, c, sandbox)
	var ie *images.Error
	if errors.As(err, &ie) {
		s.status.startFailed(pod.UID, c.Name, ie.Reason, ie.Message)
	}
	if err != nil {
		return fmt.Errorf("container %s: %w", c.Name, err)
	}
	return nil
}

func gracePeriod(pod *v1.Pod) int64 {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return v1.DefaultTerminationGracePeriodSeconds
}

// SyncTerminatingPod implements podworkers.Syncer: the pod's liveness and
// startup probes are stopped, then every container (preStop hooks first,
// sidecars after the app containers) within grace seconds, and the pod's
// status written with a final phase.
func (s *Syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, grace int64, statusFn podworkers.StatusFunc) error {
	if s.probes != nil {
		s.probes.StopLivenessAndStartup(pod)
	}
	rtp, err := s.runtimeState(ctx, pod.UID, false)
	if err != nil {
		return err
	}
	if err := s.stopAll(ctx, pod, rtp, grace); err != nil {
		return err
	}
	if rtp, err = s.runtimeState(ctx, pod.UID, true); err != nil {
		return err
	}
	s.status.write(ctx, pod, rtp, statusFn, true)
	return nil
}

// SyncTerminatingRuntimePod implements podworkers.Syncer: the containers
// of a pod the runtime runs without config are stopped.
func (s *Syncer) SyncTerminatingRuntimePod(ctx context.Context, pod *podworkers.RuntimePod) error {
	// No barrier ran for a pod without config: relist it.
	rtp, err := s.runtimeState(ctx, pod.UID, true)
	if err != nil {
		return err
	}
	return s.stopAll(ctx, nil, rtp, 1)
}

// removeSandboxes removes sandboxes and, with them, their containers.
func removeSandboxes(ctx context.Context, rt criapi.RuntimeService, sbs []*runtimeapi.PodSandbox) error {
	for _, sb := range sbs {
		if err := rt.RemovePodSandbox(ctx, sb.Id); err != nil {
			return fmt.Errorf("remove pod sandbox: %w", err)
		}
	}
	return nil
}

// SyncTerminatedPod implements podworkers.Syncer: the pod's final status
// (every container that never finished marked as the kubelet's
// TerminatePod does), its sandboxes removed if it is being deleted, its
// volumes torn down.
func (s *Syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	rtp, err := s.runtimeState(ctx, pod.UID, false)
	if err != nil {
		return err
	}
	s.status.write(ctx, pod, rtp, nil, true)
	s.status.mgr.TerminatePod(pod)
	// A pod that finished but still exists keeps its dead containers, so
	// that its logs and last states stay readable (the kubelet keeps them
	// until the pod is deleted); housekeeping removes them after that.
	if pod.DeletionTimestamp != nil {
		if err := removeSandboxes(ctx, s.rt, rtp.sandboxes); err != nil {
			return err
		}
	}
	if err := s.volumes.TearDownPod(ctx, pod.UID); err != nil {
		return err
	}
	if s.objects != nil {
		s.objects.Unregister(pod.UID)
	}
	s.backoff.gc()
	if s.alloc != nil {
		s.alloc.Forget(pod.UID)
	}
	if s.userns != nil {
		if err := s.userns.Release(ctx, pod.UID); err != nil {
			return err
		}
	}
	s.status.finishDeletion(pod)
	return nil
}

package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/nodeclaim"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/prober"
)

// Run runs every component until ctx is done, then stops them all and
// releases the runtime connection. It returns nil after a clean stop, or
// the first component error (which stops the rest).
func (a *Agent) Run(ctx context.Context) error {
	defer a.close(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: an early return stops what was started
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := func(name string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(klog.NewContext(ctx, klog.FromContext(ctx).WithName(name))); err != nil && ctx.Err() == nil {
				cancel(prefixed(name, err))
			}
		}()
	}
	if c := a.opts.Credentials; c != nil {
		start("credentials", c.Run)
		select {
		case <-c.Ready():
		default:
			klog.FromContext(ctx).Info("Waiting for the node's client certificate before registering", "node", a.opts.NodeName)
			select {
			case <-c.Ready():
			case <-ctx.Done():
				wg.Wait()
				return runErr(ctx) // the credentials' error, if they failed
			}
		}
	}
	if a.serving != nil {
		start("servingcerts", a.serving.Run)
	}
	if a.claim != nil {
		if err := a.claim.Check(ctx); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	if a.cgroups != nil {
		if err := a.cgroups.Setup(ctx); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	a.listeners = nil // the API server owns and closes them from here
	if a.services != nil {
		start("services", func(ctx context.Context) error { a.services.RunWithContext(ctx); return nil })
	}
	start("kubeletapi", a.api.Run)
	start("pleg", a.pleg.Run)
	start("prober", a.probes.Run)
	start("podworkers", a.workers.Run)
	start("status", a.statusMgr.Run)
	start("eviction", a.evict.Run)
	start("containergc", a.gc.Run)
	start("imagegc", a.imageGC.Run)
	if a.logs != nil {
		start("logrotate", a.logs.Run)
	}
	start("syncloop", a.loop.Run)
	if a.plugins != nil {
		start("plugins", a.runPlugins)
	}
	if a.nodeStatus != nil {
		start("nodestatus", a.nodeStatus.Run)
		start("lease", a.lease.Run)
		start("nodeclaim", func(ctx context.Context) error {
			select {
			case <-a.claim.Done(): // taken over: stop rather than fight
				return a.claim.Err()
			case <-ctx.Done():
				return nil
			}
		})
	}
	klog.FromContext(ctx).Info("Node agent running", "node", a.opts.NodeName, "cluster", a.client != nil, "simulator", a.sim != nil)
	<-ctx.Done()
	wg.Wait()
	if a.nodeStatus != nil && !errors.Is(context.Cause(ctx), nodeclaim.ErrNodeClaimed) {
		a.claim.Release(context.WithoutCancel(ctx))
	}
	return runErr(ctx)
}

// runErr is the error Run ends with once ctx is done: its cause, unless
// that is a plain stop.
func runErr(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// onPLEGEvent is the PLEG's sink: the sync loop's mailbox, which never
// blocks.
func (a *Agent) onPLEGEvent(ev pleg.PodLifecycleEvent) { a.loop.HandlePLEGEvent(ev) }

// onProbeResult is the prober's sink. Readiness and startup reach the
// status at once, even while the pod's worker is busy (the status
// manager's setters never block on the network); the sync follows.
func (a *Agent) onProbeResult(t prober.ProbeType, u prober.Update) {
	switch t {
	case prober.Readiness:
		a.statusMgr.SetContainerReadiness(u.PodUID, u.ContainerID.String(), u.Result == prober.Success)
	case prober.Startup:
		a.statusMgr.SetContainerStartup(u.PodUID, u.ContainerID.String(), u.Result == prober.Success)
	}
	a.loop.HandleProbeUpdate(t, u)
}

// Healthy is the agent's health: the sync loop iterated within the last
// two housekeeping-and-a-half periods and the PLEG relists.
func (a *Agent) Healthy() error {
	return errors.Join(a.syncLoopHealth(), a.pleg.Healthy())
}

// Pods returns the pods the agent runs with their latest status, by name.
func (a *Agent) Pods() []v1.Pod {
	pods := a.statusMgr.Pods()
	sort.Slice(pods, func(i, j int) bool { return kubetypes.FullName(&pods[i]) < kubetypes.FullName(&pods[j]) })
	return pods
}

// prefixed names the part an error came from, unless the part's own
// package prefix already does ("kubeletapi: listen …").
func prefixed(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

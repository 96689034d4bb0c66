package pleg

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/internal/retry"
)

// stream keeps the runtime's container event stream connected until ctx
// ends, reconnecting with exponential backoff. Each (re)connection and each
// break asks for a full relist: events may have been missed while the
// stream was down, and the relist period follows the stream's state.
func (g *Generator) stream(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ch := make(chan *runtimeapi.ContainerEventResponse, g.cfg.EventBuffer)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		// cri-client blocks on a full channel; reading continuously and
		// only recording hints keeps the stream flowing.
		for ev := range ch {
			g.hint(ev)
		}
	}()
	defer func() {
		close(ch)
		<-drained
	}()

	backoff := g.cfg.StreamBackoffInitial
	for ctx.Err() == nil {
		err := g.rt.GetContainerEvents(ctx, ch, func(c runtimeapi.RuntimeService_GetContainerEventsClient) {
			// Response headers mean the runtime has registered the
			// subscription: every later event will reach us. A stream
			// refused at once has no headers (nil metadata).
			if md, err := c.Header(); err != nil || md == nil {
				return
			}
			g.streamUp.Store(true)
			g.m.connected()
			backoff = g.cfg.StreamBackoffInitial
			logger.V(2).Info("Connected to the runtime's container event stream")
			g.requestFull()
		})
		wasUp := g.streamUp.Swap(false)
		if ctx.Err() != nil {
			return
		}
		g.m.connFailed()
		logger.Error(err, "Container event stream broke; relisting every RelistPeriod until it is back", "retryIn", backoff)
		if wasUp {
			g.requestFull()
		}
		if !g.sleep(ctx, backoff) {
			return
		}
		backoff = retry.Next(backoff, g.cfg.StreamBackoffInitial, g.cfg.StreamBackoffMax)
	}
}

// hint turns a runtime event into a single-pod relist request. An event
// without a sandbox (its pod is gone) asks for a full relist.
func (g *Generator) hint(ev *runtimeapi.ContainerEventResponse) {
	if ev.CreatedAt > 0 {
		g.m.eventLatency(g.clock.Since(time.Unix(0, ev.CreatedAt)))
	}
	uid := ev.GetPodSandboxStatus().GetMetadata().GetUid()
	if uid == "" {
		g.requestFull()
		return
	}
	g.RequestRelist(types.UID(uid))
}

// sleep waits d on the clock; it reports false if ctx ended first.
func (g *Generator) sleep(ctx context.Context, d time.Duration) bool {
	t := g.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

package syncloop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/prober"
)

func TestInboxBuiltBeforeTheLoop(t *testing.T) {
	ctx := context.Background()
	in := NewInbox()
	// The producers run before the loop exists.
	in.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u1", Type: pleg.ContainerStarted, ContainerID: containerid.ID{ID: "c1"}})
	in.HandleProbeUpdate(prober.Readiness, prober.Update{PodUID: "u1", ContainerID: containerid.ID{ID: "c1"}, Result: prober.Success})
	require.False(t, in.SourcesReady())

	l, rec, _, hooks := newCoreLoop(t, func(c *Config) { c.Inbox = in })
	l.Set(ctx, "a", []*v1.Pod{testPod("p1", "u1")})
	l.Set(ctx, "b", nil)
	l.Iterate(ctx)
	require.Equal(t, []string{"ADD p1", "ADD ", "SYNC p1"}, rec.take(), "the early input waited for the loop (source b sent an empty snapshot)")
	require.Equal(t, []string{"probe Readiness c1 Success"}, hooks.lines)
	require.True(t, in.SourcesReady())
	require.True(t, l.SourcesReady())

	_, err := New(Config{Handler: rec, Inbox: in})
	require.ErrorIs(t, err, ErrInvalidConfig, "one Inbox, one Loop")
}

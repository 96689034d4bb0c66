package probertest_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/prober"
	"github.com/nodekit/nodekit/prober/probertest"
)

func TestRecorder(t *testing.T) {
	var rec probertest.Recorder
	c1 := containerid.ID{Type: "containerd", ID: "c1"}
	c2 := containerid.ID{Type: "containerd", ID: "c2"}
	var sink func(prober.ProbeType, prober.Update) = rec.Sink
	sink(prober.Liveness, prober.Update{ContainerID: c1, Result: prober.Success, PodUID: "p"})
	sink(prober.Readiness, prober.Update{ContainerID: c1, Result: prober.Failure, PodUID: "p"})
	sink(prober.Liveness, prober.Update{ContainerID: c2, Result: prober.Success, PodUID: "p"})
	sink(prober.Liveness, prober.Update{ContainerID: c1, Result: prober.Failure, PodUID: "p"})
	require.Equal(t, 4, rec.Len())
	require.Equal(t, probertest.TypedUpdate{Type: prober.Readiness, Update: prober.Update{ContainerID: c1, Result: prober.Failure, PodUID: "p"}},
		rec.Updates()[1])

	for _, tc := range []struct {
		name   string
		t      prober.ProbeType
		id     string
		want   prober.Result
		wantOK bool
	}{
		{"latest wins", prober.Liveness, "containerd://c1", prober.Failure, true},
		{"bare ID", prober.Liveness, "c1", prober.Failure, true},
		{"by type", prober.Readiness, "containerd://c1", prober.Failure, true},
		{"other container", prober.Liveness, "containerd://c2", prober.Success, true},
		{"no startup result", prober.Startup, "containerd://c1", prober.Unknown, false},
		{"other runtime", prober.Liveness, "cri-o://c1", prober.Unknown, false},
		{"invalid ID", prober.Liveness, "", prober.Unknown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := rec.Last(tc.t, tc.id)
			require.Equal(t, tc.wantOK, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestRecorderConcurrentSink(t *testing.T) {
	var rec probertest.Recorder
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			rec.Sink(prober.Startup, prober.Update{ContainerID: containerid.ID{ID: "c1"}, Result: prober.Result(i % 3)})
			_ = rec.Updates()
		})
	}
	wg.Wait()
	require.Equal(t, 8, rec.Len())
	_, ok := rec.Last(prober.Startup, "c1")
	require.True(t, ok)
}

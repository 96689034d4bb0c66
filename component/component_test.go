package component

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// journal records what the parts did, in order.
type journal struct {
	mu  sync.Mutex
	log []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	j.log = append(j.log, s)
	j.mu.Unlock()
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.log...)
}

// part records its start, run and stop; run blocks until its context is
// done unless runErr is set.
func (j *journal) part(name string, startErr, runErr error) Part {
	return Part{Name: name,
		Start: func(context.Context) error { j.add("start " + name); return startErr },
		Run: func(ctx context.Context) error {
			j.add("run " + name)
			if runErr != nil {
				return runErr
			}
			<-ctx.Done()
			return nil
		},
		Stop: func(context.Context) error { j.add("stop " + name); return nil },
	}
}

func TestStartsInOrderStopsInReverse(t *testing.T) {
	defer goleak.VerifyNone(t)
	var j journal
	g, err := New(Config{Parts: []Part{j.part("a", nil, nil), j.part("b", nil, nil), j.part("c", nil, nil)}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	<-g.Ready()
	cancel()
	require.NoError(t, <-done)
	log := j.get()
	require.Equal(t, []string{"start a", "start b", "start c"}, log[:3], "every part starts before any runs")
	require.ElementsMatch(t, []string{"run a", "run b", "run c"}, log[3:6])
	require.Equal(t, []string{"stop c", "stop b", "stop a"}, log[6:])
}

func TestStartFailureStopsWhatStarted(t *testing.T) {
	defer goleak.VerifyNone(t)
	var j journal
	g, err := New(Config{Parts: []Part{j.part("a", nil, nil), j.part("b", errors.New("port taken"), nil), j.part("c", nil, nil)}})
	require.NoError(t, err)
	err = g.Run(context.Background())
	require.EqualError(t, err, "b: port taken")
	require.Equal(t, []string{"start a", "start b", "stop a"}, j.get(), "b never started, c never tried, no Run launched")
	select {
	case <-g.Ready():
		t.Fatal("not ready after a failed start")
	default:
	}
}

func TestRunFailureStopsAll(t *testing.T) {
	defer goleak.VerifyNone(t)
	var j journal
	g, err := New(Config{Parts: []Part{j.part("a", nil, nil), j.part("b", nil, errors.New("b: lost the runtime")), j.part("c", nil, nil)}})
	require.NoError(t, err)
	err = g.Run(context.Background())
	require.EqualError(t, err, "b: lost the runtime", "not prefixed twice")
	log := j.get()
	require.Equal(t, []string{"stop c", "stop b", "stop a"}, log[len(log)-3:])
}

func TestReadyGatesLaterParts(t *testing.T) {
	defer goleak.VerifyNone(t)
	var j journal
	release := make(chan struct{})
	gate := Part{Name: "creds",
		Run:   func(ctx context.Context) error { j.add("run creds"); close(release); <-ctx.Done(); return nil },
		Ready: func(ctx context.Context) error { <-release; j.add("creds ready"); return nil },
	}
	g, err := New(Config{Parts: []Part{gate, j.part("node", nil, nil)}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	<-g.Ready()
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, []string{"run creds", "creds ready", "start node", "run node", "stop node"}, j.get())
}

func TestGateFailure(t *testing.T) {
	defer goleak.VerifyNone(t)
	var j journal
	for name, gate := range map[string]Part{
		"run fails":   {Name: "creds", Run: func(context.Context) error { return errors.New("bootstrap refused") }, Ready: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
		"ready fails": {Name: "creds", Run: func(ctx context.Context) error { <-ctx.Done(); return nil }, Ready: func(context.Context) error { return errors.New("expired") }},
	} {
		g, err := New(Config{Parts: []Part{gate, j.part("node", nil, nil)}})
		require.NoError(t, err)
		err = g.Run(context.Background())
		require.ErrorContains(t, err, "creds: ", name)
	}
	require.Empty(t, j.get(), "the gated part never started")
}

func TestCancelDuringStart(t *testing.T) {
	defer goleak.VerifyNone(t)
	var j journal
	ctx, cancel := context.WithCancel(context.Background())
	slow := Part{Name: "slow", Start: func(ctx context.Context) error { cancel(); <-ctx.Done(); return ctx.Err() }}
	g, err := New(Config{Parts: []Part{j.part("a", nil, nil), slow, j.part("c", nil, nil)}})
	require.NoError(t, err)
	require.NoError(t, g.Run(ctx), "a stop during start is a clean stop")
	require.Equal(t, []string{"start a", "stop a"}, j.get())
}

func TestStopErrorsJoined(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := Part{Name: "x", Start: func(context.Context) error { cancel(); return nil },
		Stop: func(context.Context) error { return errors.New("socket busy") }}
	g, err := New(Config{Parts: []Part{cancelled}})
	require.NoError(t, err)
	require.EqualError(t, g.Run(ctx), "x: stop: socket busy")
	require.EqualError(t, g.Run(ctx), "component: Group.Run called twice")
}

func TestInvalidConfig(t *testing.T) {
	noop := func(context.Context) error { return nil }
	for _, parts := range [][]Part{
		{{Start: noop}},
		{{Name: "a", Start: noop}, {Name: "a", Run: noop}},
		{{Name: "a"}},
		{{Name: "a", Start: noop, Ready: noop}},
	} {
		_, err := New(Config{Parts: parts})
		require.ErrorIs(t, err, ErrInvalidConfig, fmt.Sprint(len(parts)))
	}
}

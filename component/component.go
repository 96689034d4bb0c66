package component

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"k8s.io/klog/v2"
)

// ErrInvalidConfig is wrapped by the error New returns for a bad Config.
var ErrInvalidConfig = errors.New("component: invalid config")

// Part is one component of a program.
type Part struct {
	// Name names the part in logs and errors; required and unique.
	Name string
	// Start builds what the part needs and acquires it: the I/O of the
	// program's start (dial, bind, read, create). Parts start one at a
	// time in declared order, so Start may use every part declared before.
	// Optional.
	Start func(ctx context.Context) error
	// Run runs the part until ctx is done. Returning nil early means the
	// part is done and nothing else; an error stops the group. Optional.
	Run func(ctx context.Context) error
	// Ready, if set, makes the parts after this one wait for it: Run is
	// launched as soon as Start returned, and the next part starts once
	// Ready returned nil (an error fails the start). Ready must return
	// when ctx is done.
	Ready func(ctx context.Context) error
	// Stop releases what Start acquired. It is called once the part's Run
	// returned, in reverse order of the parts, also when a later part
	// failed to start; not for a part whose Start failed or never ran.
	// Optional.
	Stop func(ctx context.Context) error
}

// Config configures a Group.
type Config struct {
	// Parts in dependency order: each may use those before it.
	Parts []Part
}

// Group runs parts as one program. Create it with New and call Run once.
type Group struct {
	parts []Part
	ready chan struct{}
	ran   atomic.Bool
}

// New validates cfg and returns a Group. It starts nothing.
func New(cfg Config) (*Group, error) {
	seen := map[string]bool{}
	var errs []error
	for i, p := range cfg.Parts {
		switch {
		case p.Name == "":
			errs = append(errs, fmt.Errorf("part %d has no name", i))
		case seen[p.Name]:
			errs = append(errs, fmt.Errorf("part %q is declared twice", p.Name))
		case p.Start == nil && p.Run == nil && p.Stop == nil:
			errs = append(errs, fmt.Errorf("part %q has nothing to start, run or stop", p.Name))
		case p.Ready != nil && p.Run == nil:
			errs = append(errs, fmt.Errorf("part %q has Ready without Run", p.Name))
		}
		seen[p.Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Group{parts: append([]Part(nil), cfg.Parts...), ready: make(chan struct{})}, nil
}

// Ready is closed once every part started and every Run was launched.
func (g *Group) Ready() <-chan struct{} { return g.ready }

// running is a started part: its Run's cancel and result.
type running struct {
	part   Part
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned (at once without Run)
}

// Run starts the parts in order, runs them until ctx is done or one fails,
// then stops them in reverse order. It returns nil after a clean stop,
// else the first failure (prefixed with its part's name) joined with any
// Stop errors. Run may be called once.
func (g *Group) Run(ctx context.Context) error {
	if g.ran.Swap(true) {
		return errors.New("component: Group.Run called twice")
	}
	failed := make(chan error, len(g.parts))
	var started []*running
	launch := func(r *running) {
		if r.part.Run == nil {
			close(r.done)
			return
		}
		base := context.WithoutCancel(ctx) // cancelled in its turn, not with ctx
		rctx, cancel := context.WithCancel(named(base, r.part.Name))
		r.cancel = cancel
		go func() {
			defer close(r.done)
			if err := r.part.Run(rctx); err != nil && rctx.Err() == nil {
				failed <- prefixed(r.part.Name, err)
			}
		}()
	}
	var first error
	deferred := []*running{}
	for _, p := range g.parts {
		if err := ctx.Err(); err != nil {
			break
		}
		if p.Start != nil {
			if err := p.Start(named(ctx, p.Name)); err != nil {
				if ctx.Err() == nil {
					first = prefixed(p.Name, err)
				}
				break
			}
		}
		r := &running{part: p, cancel: func() {}, done: make(chan struct{})}
		started = append(started, r)
		if p.Ready == nil {
			deferred = append(deferred, r)
			continue
		}
		launch(r)
		if err := waitReady(ctx, r, failed); err != nil {
			first = err
			break
		}
	}
	if first == nil && ctx.Err() == nil {
		for _, r := range deferred {
			launch(r)
		}
		close(g.ready)
		select {
		case <-ctx.Done():
		case first = <-failed:
		}
	} else {
		for _, r := range deferred {
			close(r.done) // never launched
		}
	}
	return errors.Join(first, stop(ctx, started))
}

// waitReady waits for a gating part's Ready, or its Run's failure.
func waitReady(ctx context.Context, r *running, failed <-chan error) error {
	res := make(chan error, 1)
	rctx, cancel := context.WithCancel(named(ctx, r.part.Name))
	defer cancel()
	go func() { res <- r.part.Ready(rctx) }()
	select {
	case err := <-failed:
		cancel()
		<-res
		return err
	case err := <-res:
		if err != nil && ctx.Err() == nil {
			return prefixed(r.part.Name, fmt.Errorf("not ready: %w", err))
		}
		return nil
	}
}

// stop stops the started parts in reverse order.
func stop(ctx context.Context, started []*running) error {
	var errs []error
	sctx := context.WithoutCancel(ctx)
	for i := len(started) - 1; i >= 0; i-- {
		r := started[i]
		r.cancel()
		<-r.done
		if r.part.Stop != nil {
			if err := r.part.Stop(named(sctx, r.part.Name)); err != nil {
				errs = append(errs, prefixed(r.part.Name, fmt.Errorf("stop: %w", err)))
			}
		}
	}
	return errors.Join(errs...)
}

func named(ctx context.Context, name string) context.Context {
	return klog.NewContext(ctx, klog.FromContext(ctx).WithName(name))
}

// prefixed names the part an error came from, unless the error already
// starts with the name ("kubeletapi: listen …").
func prefixed(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

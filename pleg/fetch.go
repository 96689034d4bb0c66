package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/clockctx"
)

// fetchJob is one status call: a sandbox or a container of a pod.
type fetchJob struct {
	pw      *podWork
	id      string
	sandbox bool
}

type fetchResult struct {
	pw        *podWork
	sandbox   *runtimeapi.PodSandboxStatus
	container *runtimeapi.ContainerStatus
	err       error
}

// fetch runs the status calls of work's pods, at most StatusParallelism at
// a time, and calls done for each pod once all its calls have answered.
// done runs in the caller's goroutine, one pod at a time, so it may touch
// generator state; the calls themselves run in short-lived workers that
// exit before fetch returns.
func (g *Generator) fetch(ctx context.Context, work []*podWork, done func(*podWork)) {
	var jobs []fetchJob
	for _, pw := range work {
		pw.status = &PodStatus{ID: pw.rec.uid}
		for _, e := range pw.rec.cur {
			jobs = append(jobs, fetchJob{pw: pw, id: e.id, sandbox: e.sandbox})
		}
		pw.pending = len(pw.rec.cur)
	}
	apply := func(r fetchResult) {
		pw := r.pw
		switch {
		case r.err != nil:
			pw.err = errors.Join(pw.err, r.err)
		case r.sandbox != nil:
			pw.status.SandboxStatuses = append(pw.status.SandboxStatuses, r.sandbox)
		case r.container != nil:
			pw.status.ContainerStatuses = append(pw.status.ContainerStatuses, r.container)
		}
		if pw.pending--; pw.pending == 0 {
			done(pw)
		}
	}
	workers := min(g.cfg.StatusParallelism, len(jobs))
	if workers <= 1 {
		for _, j := range jobs {
			apply(g.fetchOne(ctx, j))
		}
		return
	}
	queue := make(chan fetchJob, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	results := make(chan fetchResult, len(jobs))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range queue {
				results <- g.fetchOne(ctx, j)
			}
		})
	}
	for range jobs {
		apply(<-results)
	}
	wg.Wait()
}

// fetchOne makes one status call. A sandbox or container that vanished
// since the listing (NotFound) yields an empty result, not an error: the
// next listing will not show it either.
func (g *Generator) fetchOne(ctx context.Context, j fetchJob) fetchResult {
	r := fetchResult{pw: j.pw}
	cctx, cancel := clockctx.WithTimeout(ctx, g.clock, g.cfg.RuntimeRequestTimeout)
	defer cancel()
	if j.sandbox {
		resp, err := g.rt.PodSandboxStatus(cctx, j.id, false)
		switch {
		case isNotFound(err):
		case err != nil:
			r.err = fmt.Errorf("pod sandbox %s status: %w", j.id, callErr(cctx, err))
		case resp.GetStatus() == nil:
			r.err = fmt.Errorf("pod sandbox %s status: runtime returned no status", j.id)
		default:
			r.sandbox = resp.Status
		}
		return r
	}
	resp, err := g.rt.ContainerStatus(cctx, j.id, false)
	switch {
	case isNotFound(err):
	case err != nil:
		r.err = fmt.Errorf("container %s status: %w", j.id, callErr(cctx, err))
	case resp.GetStatus() == nil:
		r.err = fmt.Errorf("container %s status: runtime returned no status", j.id)
	default:
		r.container = resp.Status
	}
	return r
}

func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.NotFound
}

// callErr adds to err that the call timed out, if it did.
func callErr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return fmt.Errorf("%w (runtime request timed out)", err)
	}
	return err
}

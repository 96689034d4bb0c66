package plegtest

import "context"

// fault is what the next calls of a method do instead of answering.
type fault struct {
	err   error // returned, unless block
	block bool  // wait for the call's context to end
	times int   // calls left; negative: every call
}

// InjectError makes the next times calls of method return err instead of
// answering; times < 0 makes every call fail until the next InjectError or
// Block for method, and times == 0 removes the fault. method is the name of
// a pleg.RuntimeService method: "ListPodSandbox", "ListContainers",
// "PodSandboxStatus", "ContainerStatus" or "GetContainerEvents" (a failing
// GetContainerEvents returns err without opening a stream). err is
// returned as is; use a gRPC status error (google.golang.org/grpc/status)
// to imitate a CRI runtime. A method has one fault at a time: this replaces
// its previous one.
func (r *Runtime) InjectError(method string, err error, times int) {
	r.setFault(method, fault{err: err, times: times})
}

// Block makes the next times calls of method hang until their context
// ends, then return the gRPC status error a CRI client returns for that
// context (DeadlineExceeded or Canceled): a runtime that does not answer,
// for request timeouts. times < 0 blocks every call and times == 0 removes
// the method's fault; like InjectError, it replaces the method's previous
// fault.
func (r *Runtime) Block(method string, times int) {
	r.setFault(method, fault{block: true, times: times})
}

func (r *Runtime) setFault(method string, f fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.times == 0 {
		delete(r.faults, method)
		return
	}
	r.faults[method] = f
}

// Calls returns how many times method was called, failed calls included.
func (r *Runtime) Calls(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[method]
}

// begin counts a call of method and applies its fault, if any. A call
// whose context has ended fails like a CRI client's.
func (r *Runtime) begin(ctx context.Context, method string) error {
	r.mu.Lock()
	r.calls[method]++
	f, ok := r.faults[method]
	if ok && f.times > 0 {
		if f.times--; f.times == 0 {
			delete(r.faults, method)
		} else {
			r.faults[method] = f
		}
	}
	r.mu.Unlock()
	switch {
	case ok && f.block:
		<-ctx.Done()
		return ctxErr(ctx)
	case ok:
		return f.err
	case ctx.Err() != nil:
		return ctxErr(ctx)
	}
	return nil
}

package crisim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Fault is an injected misbehaviour of one CRI method.
type Fault struct {
	// Err, if set, is returned instead of calling the method. Use a gRPC
	// status error (status.Error) to control the code the client sees.
	Err error
	// Latency delays the call on the injected clock before Err is returned
	// or the method runs. The wait ends early if the call's context ends.
	Latency time.Duration
	// Times is how many calls the fault affects; zero means every call
	// until ClearFaults.
	Times int
}

type faultState struct {
	fault Fault
	left  int // calls left when fault.Times > 0
}

// methods holds the names of every RPC of the CRI runtime and image services.
var methods = func() map[string]bool {
	names := map[string]bool{}
	for _, desc := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		for _, m := range desc.Methods {
			names[m.MethodName] = true
		}
		for _, st := range desc.Streams {
			names[st.StreamName] = true
		}
	}
	return names
}()

// Inject makes method (a CRI RPC name such as "ContainerStatus" or
// "PullImage") misbehave as f describes, replacing any fault already
// injected for it. It panics on a name that is not a CRI RPC, so that a typo
// cannot silently disable a test's fault.
func (s *Sim) Inject(method string, f Fault) {
	if !methods[method] {
		panic(fmt.Sprintf("crisim: Inject: %q is not a CRI RPC", method))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = &faultState{fault: f, left: f.Times}
}

// ClearFaults removes every injected fault.
func (s *Sim) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
}

// Calls reports how many calls method has received, including failed ones.
func (s *Sim) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// takeFault counts a call of method and returns the fault that applies to
// it, consuming one of its Times.
func (s *Sim) takeFault(method string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	fs, ok := s.faults[method]
	if !ok {
		return Fault{}, false
	}
	if fs.fault.Times > 0 {
		fs.left--
		if fs.left <= 0 {
			delete(s.faults, method)
		}
	}
	return fs.fault, true
}

// intercept applies the fault of the method named by fullMethod
// ("/runtime.v1.RuntimeService/ListContainers").
func (s *Sim) intercept(ctx context.Context, fullMethod string) error {
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	f, ok := s.takeFault(method)
	if !ok {
		return nil
	}
	if err := s.sleep(ctx, f.Latency); err != nil {
		return err
	}
	return f.Err
}

// unaryInterceptor applies faults and ends the call's context when quit is
// done, so that waiting handlers return when the server stops.
func (s *Sim) unaryInterceptor(quit context.Context) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, cancel := linkContext(ctx, quit)
		defer cancel()
		if err := s.intercept(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// streamInterceptor is the streaming counterpart of unaryInterceptor.
func (s *Sim) streamInterceptor(quit context.Context) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, cancel := linkContext(ss.Context(), quit)
		defer cancel()
		if err := s.intercept(ctx, info.FullMethod); err != nil {
			return err
		}
		return handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	}
}

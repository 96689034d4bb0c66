// Package podworkerstest provides fakes of the interfaces package podworkers
// accepts, so that hosts can test their use of podworkers.Workers without
// writing private fakes:
//
//   - Syncer, a podworkers.Syncer that records every call in order and lets
//     a test script each pod's results (an error, a terminal SyncPod) and
//     hold a call in flight until the test releases it;
//   - Barrier, whose Wait method is a podworkers.StatusBarrier that returns
//     at once or holds a pod until the test releases it.
//
// The zero value of each fake is ready to use and every method is safe for
// concurrent use. Nothing sleeps or polls: a test waits for a fake's state
// with WaitCalls, WaitInFlight or WaitHeld, which return when the state is
// reached or the test's ctx is done.
//
// A typical test drives Workers synchronously with ProcessPending and a
// fake clock:
//
//	s := &podworkerstest.Syncer{}
//	w, _ := podworkers.New(podworkers.Config{Syncer: s, Clock: clk})
//	_ = w.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod})
//	w.ProcessPending(ctx)
//	// podworkerstest.Transcript(s.Calls()) is ["SyncPod create <uid>"]
package podworkerstest

// Package synclooptest provides fakes of the interfaces package syncloop
// accepts, so that hosts can test their wiring of syncloop.Loop without
// writing private fakes:
//
//   - Handler, a syncloop.Handler (and so a syncloop.PodConfigHandler)
//     that records every call as an Op and lets a test wait for them;
//   - Source, a syncloop.Source whose snapshots the test pushes.
//
// Both are safe for concurrent use. Nothing sleeps or polls: Handler.Wait
// returns as soon as the loop has made the calls waited for, or the test's
// ctx is done.
//
// Drive the loop's synchronous core with Loop.Set and Loop.Iterate on a
// fake clock, and read the calls with Handler.Take:
//
//	h := &synclooptest.Handler{}
//	loop, _ := syncloop.New(syncloop.Config{Handler: h, ExternalSources: []string{"api"}, Clock: clk})
//	loop.Set(ctx, "api", []*v1.Pod{pod})
//	loop.Iterate(ctx)
//	// synclooptest.Transcript(h.Take()) is ["ADD <name>"]
//
// To test Loop.Run, give it Sources, push snapshots, wait for the calls
// with Handler.Wait, and wait until Loop.NextWake reports ok before
// stepping the fake clock to the time it returns.
package synclooptest

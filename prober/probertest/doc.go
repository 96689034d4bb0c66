// Package probertest provides fakes for testing code built on the prober
// block without a container runtime: Runner, a scripted
// prober.CommandRunner for exec probes, and Recorder, a prober.Config.Sink
// that keeps every result change.
//
// A test drives a prober.Manager on a fake clock with Manager.RunOnce, so
// nothing sleeps:
//
//	clk := clocktesting.NewFakeClock(start)
//	runner, rec := &probertest.Runner{}, &probertest.Recorder{}
//	m, _ := prober.New(prober.Config{Clock: clk, Runner: runner, Sink: rec.Sink,
//		Rand: func() float64 { return 0 }}) // first runs at AddPod time
//	_ = m.AddPod(pod)
//	m.UpdatePodStatus(ctx, pod, status) // container "containerd://c1" running
//	m.RunOnce(ctx)                      // liveness Success
//	runner.SetExit("cat /tmp/healthy", 1)
//	for range 3 { // failureThreshold
//		clk.Step(10 * time.Second) // periodSeconds
//		m.RunOnce(ctx)
//	}
//	res, _ := rec.Last(prober.Liveness, "containerd://c1") // Failure
//
// Both fakes are safe for concurrent use and their zero values are ready to
// use. Recorder is not an event recorder: for prober.Config.Recorder use
// client-go's record.FakeRecorder.
package probertest

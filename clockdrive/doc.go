// Package clockdrive steps one fake clock for many nodekit blocks, so a
// test (or a simulation) runs a whole node agent in fake time without a
// sleep.
//
// # Model
//
// Every block with a Run loop tells, on its injected clock, when it next
// wakes, by one method, NextWake: it is a [Waker] (lease.Controller,
// nodestatus.Controller, pleg.Generator, prober.Manager, eviction.Manager,
// syncloop.Loop and its file and URL sources, containergc.Collector,
// pluginwatch.Watcher; podstatus.Manager and nodecerts do not tell yet).
// The contract, which this package relies on:
//
//   - ok false: the block is busy (a pass, a request, a wake-up it was
//     handed) or has not armed its timer yet. Ask again.
//   - ok true and a time after the clock's now: the block is parked and
//     wakes at that time.
//   - ok true and a time not after now: the block's timer has fired and
//     its loop has not run the pass yet; it is about to wake. Ask again.
//   - ok true and the zero time: parked with nothing due on the clock.
//
// podworkers.Workers.Active counts syncs not waiting for the clock; wrap it
// with Idle to make it a Waker. NextFunc makes any function one.
//
// # Host duties
//
//  1. Build the blocks on one *testing.FakeClock (k8s.io/utils/clock/testing).
//  2. Start their Run loops.
//  3. New(clock, blocks) with every block by name.
//  4. Call Step (or StepUntil) with a context whose deadline is the
//     real-time safety net: an error names the blocks that never parked.
//
// It imports no other nodekit package; every block fits.
package clockdrive

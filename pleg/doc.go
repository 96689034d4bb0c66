// Package pleg is a pod lifecycle event generator: it turns the state of a
// CRI container runtime into PodLifecycleEvents (container started, died,
// removed, changed) that a sync loop acts on.
//
// It offers a relisting generator that periodically lists sandboxes and
// containers through a CRI RuntimeService and fetches pod status only for
// pods that changed, an evented mode that uses the runtime's container event
// stream as hints, a pod status cache with a freshness barrier
// (GetNewerThan), and a health check. Events are never silently lost.
package pleg

// Package syncloop is the kubelet's main loop as a small router: it merges
// pod configuration sources into one update stream and dispatches pod
// updates, pod lifecycle events, probe results, periodic syncs and
// housekeeping to a host-implemented Handler.
//
// It is the one nodekit package allowed to import another: it uses the event
// and result types of pleg and prober, whose output it routes.
package syncloop

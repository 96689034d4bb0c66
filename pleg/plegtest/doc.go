// Package plegtest provides Runtime, an in-memory fake of the
// pleg.RuntimeService a pleg.Generator reads, so that code built on the pleg
// block can be tested without a container runtime or internal packages.
//
// # Model
//
// A Runtime holds pods the way the generator reads them: sandboxes with
// metadata (name, namespace, UID), a state, a creation time, an IP and the
// pleg.PodUIDLabel label; containers with metadata (name, attempt), a state,
// creation, start and finish times, an exit code, their sandbox's ID, an
// image and the same label. A test changes that state with a few driver
// methods, named after what the kubelet and the runtime do:
//
//	rt := plegtest.New(clk)
//	rt.RunPod("uid-web", "default", "web") // "sb-1": a ready sandbox
//	app := rt.StartContainer("uid-web", "app") // "c-1": created, then running
//	_ = rt.ExitContainer(app, 1)               // exited with code 1
//	_ = rt.RemoveContainer(app)
//	_ = rt.StopPod("uid-web")   // running containers killed, sandbox not ready
//	_ = rt.RemovePod("uid-web") // everything of the pod gone
//
// IDs are deterministic: sandboxes are "sb-1", "sb-2", …, containers "c-1",
// "c-2", …, in creation order. Timestamps come from the injected clock; every
// timestamp is strictly later than the one before (a nanosecond is added when
// the clock has not moved), so a fake clock that is never stepped still
// orders sandboxes and containers by creation, newest first, as pleg sorts
// them.
//
// Every change is also published, as CRI runtimes do, to the open
// GetContainerEvents streams: CONTAINER_CREATED_EVENT, CONTAINER_STARTED_EVENT,
// CONTAINER_STOPPED_EVENT and CONTAINER_DELETED_EVENT for containers and, with
// the sandbox's ID as container ID, for sandboxes. Each event carries the
// sandbox's status and the statuses of the sandbox's containers.
//
// InjectError and Block make the next calls of a method fail or hang until
// their context ends; Calls counts calls; Streams and BreakStreams observe
// and break the event streams.
//
// All methods are safe for concurrent use.
package plegtest

// Package containergc chooses which dead containers and sandboxes a node
// agent removes, with the kubelet's default policy: of the exited instances
// of each container of a pod that still exists, the newest
// MaxPerPodContainer (1) are kept (its last state and previous logs stay
// readable) and older ones go; of a pod that no longer exists everything
// dead goes; not-ready sandboxes go once they hold no container, except a
// live pod's newest sandbox. Running containers and ready sandboxes are
// never chosen.
//
// Select is pure; Collect lists the runtime, selects and removes, and is
// what a housekeeping pass or eviction's DeleteUnusedContainers calls.
package containergc

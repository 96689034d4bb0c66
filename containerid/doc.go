// Package containerid is the one shape of a container's identity shared by
// nodekit's blocks: the runtime's name and the runtime's own ID, written
// "<type>://<id>" in pod statuses (v1.ContainerStatus.ContainerID).
//
// pleg events and prober updates both carry an ID, so a host compares them
// without parsing strings. It is a leaf package: it imports nothing of
// nodekit and every block may use it.
package containerid

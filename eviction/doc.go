// Package eviction implements node-pressure eviction: it observes resource
// usage signals (memory.available, nodefs.*, imagefs.*, containerfs.*,
// pid.available), compares them with hard and soft thresholds in the
// kubelet's flag syntax, reports pressure conditions, reclaims node-level
// resources first and then ranks pods and evicts one per pass through a
// host-supplied kill function.
package eviction

// Package podworkers runs one worker per pod and drives each pod through the
// kubelet's lifecycle: syncing, terminating, terminated and finished.
//
// Updates to a pod are serialized and coalesced (only the latest pending
// update is kept, a termination request is never lost), grace periods only
// ever shorten, resyncs and error backoff run on an injected clock, and
// static pods sharing a full name run one at a time. The host program
// supplies the runtime work through a Syncer.
package podworkers

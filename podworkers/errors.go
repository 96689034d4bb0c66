package podworkers

import "errors"

var (
	// ErrInvalidConfig is wrapped by the error New returns for a bad Config.
	ErrInvalidConfig = errors.New("podworkers: invalid config")
	// ErrInvalidUpdate is wrapped by the error UpdatePod returns for an
	// update it cannot act on (no pod, empty UID, unknown type, a runtime
	// pod with a type other than UpdateKill).
	ErrInvalidUpdate = errors.New("podworkers: invalid update")
	// ErrUnknownPod is wrapped by the error Resync returns for a UID the
	// workers do not track.
	ErrUnknownPod = errors.New("podworkers: unknown pod")
	// ErrAlreadyRunning is returned by Run while another Run is active.
	ErrAlreadyRunning = errors.New("podworkers: already running")
	// ErrSyncerPanic is wrapped by the error recorded when a Syncer method
	// panics; the pod is retried after the error backoff like any other
	// failed sync.
	ErrSyncerPanic = errors.New("podworkers: syncer panicked")
)

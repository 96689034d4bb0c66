package prober

import "errors"

var (
	// ErrInvalidConfig wraps every configuration error returned by New.
	ErrInvalidConfig = errors.New("prober: invalid config")
	// ErrInvalidProbe wraps the errors of a probe that cannot be run: no
	// handler or more than one, a port out of range or not declared by the
	// container, negative thresholds. AddPod returns them; the probe's worker
	// reports them as a Warning event each period and publishes no result,
	// like upstream's "probe errored" path.
	ErrInvalidProbe = errors.New("prober: invalid probe")
	// ErrNoRunner is returned for an exec probe when Config.Runner is nil.
	ErrNoRunner = errors.New("prober: no command runner for exec probes")
)

// errTimedOut is the cause of a probe context cancelled by the probe's
// timeout.
var errTimedOut = errors.New("prober: probe timed out")

package lease

import "errors"

var (
	// ErrInvalidConfig wraps every configuration error returned by New.
	ErrInvalidConfig = errors.New("lease: invalid config")
	// ErrUnknownName is returned by Renew for a name the controller does not
	// manage.
	ErrUnknownName = errors.New("lease: unknown node name")
	// ErrAttemptsExhausted is returned when every update attempt of a
	// renewal hit a conflict.
	ErrAttemptsExhausted = errors.New("lease: update attempts exhausted")
)

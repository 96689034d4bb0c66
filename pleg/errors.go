package pleg

import "errors"

var (
	// ErrInvalidConfig wraps every configuration error returned by New.
	ErrInvalidConfig = errors.New("pleg: invalid config")
	// ErrUnhealthy wraps the error Healthy returns when no relist has
	// completed recently enough.
	ErrUnhealthy = errors.New("pleg: not healthy")
)

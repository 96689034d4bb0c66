package eviction

import "errors"

var (
	// ErrInvalidConfig wraps every configuration error returned by New.
	ErrInvalidConfig = errors.New("eviction: invalid config")
	// ErrInvalidThreshold wraps every error returned by ParseThresholds and
	// ParseThresholdFlags.
	ErrInvalidThreshold = errors.New("eviction: invalid threshold")
)

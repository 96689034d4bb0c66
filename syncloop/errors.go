package syncloop

import "errors"

var (
	// ErrInvalidConfig wraps every configuration error returned by the
	// constructors.
	ErrInvalidConfig = errors.New("syncloop: invalid config")
	// ErrInvalidManifest wraps every error about a static pod manifest (a
	// *ManifestError).
	ErrInvalidManifest = errors.New("syncloop: invalid manifest")
)

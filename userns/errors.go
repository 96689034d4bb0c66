package userns

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Sentinels callers branch on with errors.Is. The errors a pod's event or
// waiting message shows keep the kubelet's text (without the "userns:"
// prefix) and match these through errors.Is.
var (
	// ErrInvalidConfig wraps every error New returns for a bad Config or
	// an unusable ID range.
	ErrInvalidConfig = errors.New("userns: invalid config")
	// ErrRuntimeUnsupported matches the error for a pod with
	// hostUsers: false whose runtime handler has no user namespace
	// support. Its text is the kubelet's: "can't set `spec.hostUsers:
	// false`, runtime does not support user namespaces".
	ErrRuntimeUnsupported = errors.New("userns: runtime handler does not support user namespaces")
	// ErrForbidden matches the error for a pod with hostUsers: false that
	// also asks for a host namespace or volumeDevices (see ValidatePod).
	ErrForbidden = errors.New("userns: pod spec forbidden with hostUsers: false")
	// ErrExhausted matches the error when every range is in use. Its
	// text is the kubelet's: "could not find an empty slot to allocate a
	// user namespace".
	ErrExhausted = errors.New("userns: no free user namespace range")
	// ErrInvalidMappings matches the errors for a pod's persisted mappings
	// file that cannot be used: malformed, a length other than IDsPerPod,
	// a range outside the configured one or taken by another pod.
	ErrInvalidMappings = errors.New("userns: invalid user namespace mappings")
	// ErrInvalidUID matches the error for a pod UID that cannot name a
	// pod directory (empty, ".", "..", or containing a slash).
	ErrInvalidUID = errors.New("userns: invalid pod UID")
)

// kubeletError carries the kubelet's message and matches a sentinel.
type kubeletError struct {
	msg  string
	kind error
}

func (e *kubeletError) Error() string        { return e.msg }
func (e *kubeletError) Is(target error) bool { return target == e.kind }

func newError(kind error, format string, args ...any) error {
	return &kubeletError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// unsupported is the kubelet's message for a runtime handler without user
// namespaces ("" is the default handler).
func unsupported(handler string) error {
	if handler != "" {
		return newError(ErrRuntimeUnsupported,
			"can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
	}
	return newError(ErrRuntimeUnsupported, "can't set `spec.hostUsers: false`, runtime does not support user namespaces")
}

// forbidden is the API server's validation message for the fields.
func forbidden(errs field.ErrorList) error {
	return &kubeletError{msg: errs.ToAggregate().Error(), kind: ErrForbidden}
}

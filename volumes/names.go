package volumes

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsafeName is returned for a pod UID or volume name that would name a
// directory outside the pod's (a path separator, "." or ".."): the
// manager neither creates nor removes anything for it. Pods from the API
// server cannot have one; static pods are validated before they get here,
// and this is the last line.
var ErrUnsafeName = errors.New("volumes: name cannot be a directory name")

// checkName refuses a UID or volume name that is not a single path
// component.
func checkName(kind, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("%w: %s %q", ErrUnsafeName, kind, name)
	}
	return nil
}

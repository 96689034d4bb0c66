package containerid

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by Parse's errors.
var ErrInvalid = errors.New("containerid: invalid container ID")

// ID identifies a container. The zero value is "no container".
type ID struct {
	// Type is the runtime's name ("containerd"), as the scheme of the ID
	// in pod statuses. It may be empty when the producer does not know it
	// (a pleg.Generator without Config.RuntimeName).
	Type string
	// ID is the runtime's ID of the container, the one CRI calls take.
	ID string
}

// Parse reads "<type>://<id>" as pod statuses write it. A string without
// "://" is a bare runtime ID (Type empty). An empty string or an empty ID is
// an error.
func Parse(s string) (ID, error) {
	typ, id, found := strings.Cut(s, "://")
	if !found {
		typ, id = "", s
	}
	if id == "" {
		return ID{}, fmt.Errorf("%w: %q has no ID", ErrInvalid, s)
	}
	return ID{Type: typ, ID: id}, nil
}

// String returns "<type>://<id>", the ID alone when Type is empty, and ""
// for the zero ID.
func (c ID) String() string {
	if c.Type == "" {
		return c.ID
	}
	return c.Type + "://" + c.ID
}

// IsEmpty reports whether c names no container.
func (c ID) IsEmpty() bool { return c.ID == "" }

// Same reports whether c and o name the same container: equal runtime IDs,
// and equal types unless either side does not know its type.
func (c ID) Same(o ID) bool {
	return c.ID == o.ID && (c.Type == "" || o.Type == "" || c.Type == o.Type)
}

package csi

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The errors a registration, a vol_data.json or a path is refused with;
// each is wrapped with the details.
var (
	// ErrInvalidDriverName: a driver name that is not a DNS-1123
	// subdomain of at most 63 characters (upstream's rule for CSIDriver
	// names), in a registration or a vol_data.json.
	ErrInvalidDriverName = errors.New("csi: invalid driver name")
	// ErrInvalidEndpoint: a driver endpoint that is not an absolute Unix
	// socket path.
	ErrInvalidEndpoint = errors.New("csi: the endpoint is not a Unix socket path")
	// ErrAlreadyRegistered: a driver of the same name is registered from
	// another endpoint with a version not lower than the one offered.
	ErrAlreadyRegistered = errors.New("csi: another driver with the same name is already registered")
	// ErrInvalidVolData: a vol_data.json that does not name a valid
	// driver and a volume handle; the volume it describes is not acted on.
	ErrInvalidVolData = errors.New("csi: invalid volume data")
	// ErrUnsafePath: a path built from a driver name, a volume handle or
	// a volume directory that is not under the root directory.
	ErrUnsafePath = errors.New("csi: path is not under the root directory")
	// ErrTopologyCollision: a driver reported a topology label the Node
	// already has with another value (upstream's message follows).
	ErrTopologyCollision = errors.New("csi: detected topology value collision")
)

// maxDriverNameLength is upstream's limit on a CSI driver's name.
const maxDriverNameLength = 63

// checkDriverName refuses a driver name upstream's API validation would
// (a CSIDriver's name: a DNS-1123 subdomain, case aside, of at most 63
// characters). Such a name never holds a path separator or "..", so it
// is one safe path element.
func checkDriverName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidDriverName)
	case len(name) > maxDriverNameLength:
		return fmt.Errorf("%w %q: longer than %d characters", ErrInvalidDriverName, name, maxDriverNameLength)
	}
	if errs := validation.IsDNS1123Subdomain(strings.ToLower(name)); len(errs) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalidDriverName, name, strings.Join(errs, "; "))
	}
	return nil
}

// socketPath is the Unix socket an endpoint names: an absolute path,
// bare or after "unix://" or "unix:", cleaned. Anything else (a gRPC
// target of another scheme such as dns:///host:port, host:port, a
// relative path, an abstract socket) is refused, so a driver's calls,
// which carry secrets and service account tokens, never leave the node.
func socketPath(endpoint string) (string, error) {
	p := endpoint
	if rest, ok := strings.CutPrefix(p, "unix://"); ok {
		p = rest
	} else if rest, ok := strings.CutPrefix(p, "unix:"); ok {
		p = rest
	}
	if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: %q (want an absolute path, or unix:// and one)", ErrInvalidEndpoint, endpoint)
	}
	return filepath.Clean(p), nil
}

// underRoot joins elems under root and returns the path if it is
// strictly below root, ErrUnsafePath otherwise.
func underRoot(root string, elems ...string) (string, error) {
	p := filepath.Join(append([]string{root}, elems...)...)
	if !within(root, p) {
		return "", fmt.Errorf("%w: %q under %q", ErrUnsafePath, p, root)
	}
	return p, nil
}

// within reports whether path p, cleaned, is strictly below root.
func within(root, p string) bool {
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(p))
	if err != nil || filepath.IsAbs(rel) {
		return false
	}
	return rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

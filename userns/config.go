package userns

import (
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

const (
	// DefaultIDsPerPod is the kubelet's default userNamespaces.idsPerPod:
	// each pod maps container IDs 0-65535 to its own host range.
	DefaultIDsPerPod = 65536
	// DefaultMaxPods is the kubelet's default maxPods; the ID range must
	// hold at least this many pods.
	DefaultMaxPods = 110
	// MappingsFile is the name of the file in a pod's directory that holds
	// its mappings (JSON, as the kubelet writes it), so a pod keeps its
	// range across restarts of the agent or of a kubelet on the same node.
	MappingsFile = "userns"

	// unitLength is the granularity of IDsPerPod.
	unitLength = 65536
	// idSpace is the number of 32-bit IDs.
	idSpace = uint64(1) << 32
)

// IDRange is a range of host user and group IDs: First, First+1, ...
// First+Length-1.
type IDRange struct {
	// First is the first host ID of the range.
	First uint32
	// Length is the number of IDs in the range.
	Length uint32
}

// Config configures a Manager. Zero values are the kubelet's defaults.
type Config struct {
	// RootDir is the kubelet's --root-dir (/var/lib/kubelet on most
	// nodes): a pod's mappings are kept in <RootDir>/pods/<uid>/userns,
	// where the kubelet keeps them. Required unless both PodDir and
	// ListPodDirs are set.
	RootDir string
	// PodDir returns the directory of the pod with that UID; it need not
	// exist (PodUserNamespace creates it, mode 0750). nil:
	// <RootDir>/pods/<uid>. Called with the manager's lock held: it must
	// not block or call back into the Manager.
	PodDir func(uid types.UID) string
	// ListPodDirs lists the UIDs of the pods that have a directory (the
	// kubelet's ListPodsFromDisk); an error matching fs.ErrNotExist means
	// none. nil: the directories in <RootDir>/pods. Called by New and
	// CleanupOrphans, under the manager's lock: it must not call back into
	// the Manager.
	ListPodDirs func() ([]types.UID, error)

	// IDsPerPod is the number of host IDs each pod gets (the kubelet's
	// userNamespaces.idsPerPod): a multiple of 65536. 0: DefaultIDsPerPod.
	// Changing it refuses the mappings pods were given with another value
	// (New fails), as on the kubelet.
	IDsPerPod uint32
	// MaxPods is the node's maxPods: New fails if Range holds fewer pods.
	// 0: DefaultMaxPods.
	MaxPods int
	// Range is the host IDs pods' ranges are cut from. First must be a
	// multiple of IDsPerPod and at least IDsPerPod (host IDs below it are
	// never mapped); Length a multiple of IDsPerPod; the range may not
	// pass the last 32-bit ID. Zero: KubeletMappings(SubIDs), as the
	// kubelet discovers it: the "kubelet" user's subordinate IDs, or
	// every ID from IDsPerPod up when there is no such user.
	Range IDRange
	// SubIDs is where Range is discovered when it is zero.
	SubIDs SubIDs

	// AllowHostNetwork lets pods with hostUsers: false use the host's
	// network namespace (the UserNamespacesHostNetworkSupport gate, alpha
	// and off in v1.36). Set it only when the runtime reports
	// features.user_namespaces_host_network in its CRI Status.
	// false: such pods are refused, as API validation refuses them.
	AllowHostNetwork bool
}

// settings is a validated Config with defaults filled in.
type settings struct {
	podDir           func(types.UID) string
	listPodDirs      func() ([]types.UID, error)
	idsPerPod        uint32
	maxPods          int
	allowHostNetwork bool
}

func (cfg Config) settings() (settings, error) {
	s := settings{
		podDir:           cfg.PodDir,
		listPodDirs:      cfg.ListPodDirs,
		idsPerPod:        cfg.IDsPerPod,
		maxPods:          cfg.MaxPods,
		allowHostNetwork: cfg.AllowHostNetwork,
	}
	if s.podDir == nil || s.listPodDirs == nil {
		if cfg.RootDir == "" {
			return s, fmt.Errorf("%w: RootDir is required unless PodDir and ListPodDirs are set", ErrInvalidConfig)
		}
		if !filepath.IsAbs(cfg.RootDir) {
			return s, fmt.Errorf("%w: RootDir %q must be absolute", ErrInvalidConfig, cfg.RootDir)
		}
		podsDir := filepath.Join(cfg.RootDir, "pods")
		if s.podDir == nil {
			s.podDir = func(uid types.UID) string { return filepath.Join(podsDir, string(uid)) }
		}
		if s.listPodDirs == nil {
			s.listPodDirs = func() ([]types.UID, error) { return listDirs(podsDir) }
		}
	}
	if s.idsPerPod == 0 {
		s.idsPerPod = DefaultIDsPerPod
	}
	// The kubelet's configuration validation of userNamespaces.idsPerPod.
	if s.idsPerPod < unitLength {
		return s, fmt.Errorf("%w: userNamespaces.idsPerPod must not be less than %d", ErrInvalidConfig, unitLength)
	}
	if s.idsPerPod%unitLength != 0 {
		return s, fmt.Errorf("%w: userNamespaces.idsPerPod must be a multiple of %d", ErrInvalidConfig, unitLength)
	}
	if s.maxPods < 0 {
		return s, fmt.Errorf("%w: MaxPods %d must not be negative", ErrInvalidConfig, s.maxPods)
	}
	if s.maxPods == 0 {
		s.maxPods = DefaultMaxPods
	}
	return s, nil
}

// validateRange checks the pods' ID range as the kubelet's user namespace
// manager does, plus the end of the 32-bit ID space (which the kubelet
// does not check: host IDs past it would wrap around to root's).
func validateRange(r IDRange, idsPerPod uint32, maxPods int) error {
	if r.First%idsPerPod != 0 {
		return fmt.Errorf("%w: kubelet user assigned ID %v is not a multiple of %v", ErrInvalidConfig, r.First, idsPerPod)
	}
	if r.First < idsPerPod {
		// Mapping host ID 0 would circumvent the isolation.
		return fmt.Errorf("%w: kubelet user assigned ID %v must be greater or equal to %v", ErrInvalidConfig, r.First, idsPerPod)
	}
	if r.Length%idsPerPod != 0 {
		return fmt.Errorf("%w: kubelet user assigned IDs length %v is not a multiple of %v", ErrInvalidConfig, r.Length, idsPerPod)
	}
	if uint64(r.First)+uint64(r.Length) > idSpace {
		return fmt.Errorf("%w: kubelet user assigned IDs %v-%v end past the last ID %v", ErrInvalidConfig,
			r.First, uint64(r.First)+uint64(r.Length)-1, idSpace-1)
	}
	if uint64(r.Length/idsPerPod) < uint64(maxPods) {
		return fmt.Errorf("%w: kubelet user assigned IDs are not enough to support %v pods", ErrInvalidConfig, maxPods)
	}
	return nil
}

package userns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Manager hands pods with hostUsers: false a range of host IDs each and
// keeps it, on disk, until the pod is gone. Its methods may be called
// concurrently. Build it with New.
type Manager struct {
	cfg       settings
	rng       IDRange
	off       uint32 // rng.First / idsPerPod: the slot of the first range
	idsPerPod uint32

	// write persists a pod's range (writeMappings; tests replace it).
	write func(uid types.UID, r IDRange) error

	mu     sync.Mutex
	slots  slots
	usedBy map[types.UID]uint32 // pod UID → first host ID of its range
}

// New validates cfg, discovers the ID range if cfg.Range is zero, and
// records the mappings persisted in the pod directories, so pods keep
// their ranges across restarts. As on the kubelet, a mappings file it
// cannot use (malformed, another length, outside the range, a range taken
// twice) fails New: a node that cannot tell which IDs are in use must not
// hand any out.
func New(cfg Config) (*Manager, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	rng := cfg.Range
	if rng == (IDRange{}) {
		if rng, err = kubeletMappings(logr.Discard(), s.idsPerPod, cfg.SubIDs); err != nil {
			return nil, fmt.Errorf("%w: kubelet mappings: %w", ErrInvalidConfig, err)
		}
	}
	if err := validateRange(rng, s.idsPerPod, s.maxPods); err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:       s,
		rng:       rng,
		off:       rng.First / s.idsPerPod,
		idsPerPod: s.idsPerPod,
		slots:     newSlots(int(rng.Length / s.idsPerPod)),
		usedBy:    map[types.UID]uint32{},
	}
	m.write = m.writeMappings
	found, err := s.listPodDirs()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return m, nil
		}
		return nil, fmt.Errorf("userns: read pods from disk: %w", err)
	}
	for _, uid := range found {
		if err := m.recordFromDisk(uid); err != nil {
			return nil, fmt.Errorf("userns: record pod mappings for existing pod %q: %w", uid, err)
		}
	}
	return m, nil
}

// recordFromDisk records the range in the pod's MappingsFile, if any.
func (m *Manager) recordFromDisk(uid types.UID) error {
	if err := checkUID(uid); err != nil {
		return nil // not a pod directory the manager could have written
	}
	content, err := m.readMappings(uid)
	if err != nil || len(content) == 0 {
		return err
	}
	r, err := parseMappings(content)
	if err != nil {
		return err
	}
	return m.record(uid, r)
}

// Range is the host IDs pods' ranges are cut from.
func (m *Manager) Range() IDRange { return m.rng }

// IDsPerPod is the length of each pod's range.
func (m *Manager) IDsPerPod() uint32 { return m.idsPerPod }

// Allocation returns the pod's range, if it has one.
func (m *Manager) Allocation(uid types.UID) (IDRange, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	first, ok := m.usedBy[uid]
	if !ok {
		return IDRange{}, false
	}
	return IDRange{First: first, Length: m.idsPerPod}, true
}

// PodUserNamespace returns the user namespace of the pod's sandbox and of
// every one of its containers (the kubelet's
// GetOrCreateUserNamespaceMappings). A pod with hostUsers unset or true
// gets the host's (mode NODE). A pod with hostUsers: false gets mode POD
// with its range mapped from container ID 0 for users and groups: the one
// in its MappingsFile if it has one (the kubelet's, or ours from before a
// restart), else a newly allocated one, written there before it is
// returned.
//
// runtimeHandler is the pod's CRI runtime handler ("" the default, else
// its RuntimeClass's) and handlerSupportsUserNS whether the runtime
// reports user namespace support for it (HandlerSupportsUserNamespaces).
// The errors a user sees keep the kubelet's text: ErrRuntimeUnsupported,
// ErrForbidden (see ValidatePod), ErrExhausted, ErrInvalidMappings.
//
// Calls for the same pod return the same range until Release. The result
// is the caller's to keep or change.
func (m *Manager) PodUserNamespace(ctx context.Context, pod *v1.Pod, runtimeHandler string, handlerSupportsUserNS bool) (*runtimeapi.UserNamespace, error) {
	if !UsesUserNamespace(pod) {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	if errs := ValidatePod(pod, m.cfg.allowHostNetwork); len(errs) > 0 {
		return nil, forbidden(errs)
	}
	if !handlerSupportsUserNS {
		return nil, unsupported(runtimeHandler)
	}
	if err := checkUID(pod.UID); err != nil {
		return nil, err
	}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "pod", klog.KObj(pod), "podUID", pod.UID)

	m.mu.Lock()
	defer m.mu.Unlock()
	first, err := m.getOrCreate(logger, pod.UID)
	if err != nil {
		return nil, err
	}
	return userNamespace(first, m.idsPerPod), nil
}

// getOrCreate returns the first host ID of the pod's range: the one on
// disk, the one in memory (rewritten if its file went missing), or a new
// one. The caller holds m.mu.
func (m *Manager) getOrCreate(logger klog.Logger, uid types.UID) (uint32, error) {
	content, err := m.readMappings(uid)
	if err != nil {
		return 0, fmt.Errorf("user namespace: %w", err)
	}
	if len(content) > 0 {
		r, err := parseMappings(content)
		if err == nil {
			err = m.record(uid, r)
		}
		if err != nil {
			return 0, fmt.Errorf("user namespace: %w", err)
		}
		return r.First, nil
	}
	if first, ok := m.usedBy[uid]; ok {
		// The file went missing while the pod holds the range: write it
		// again rather than hand the pod a second range.
		logger.Info("User namespace mappings file missing, writing it again", "first", first)
		if err := m.write(uid, IDRange{First: first, Length: m.idsPerPod}); err != nil {
			return 0, fmt.Errorf("create user namespace: %w", err)
		}
		return first, nil
	}
	first, err := m.create(logger, uid)
	if err != nil {
		return 0, fmt.Errorf("create user namespace: %w", err)
	}
	return first, nil
}

// create allocates a range to the pod and persists it; on failure the
// range is released again. The caller holds m.mu.
func (m *Manager) create(logger klog.Logger, uid types.UID) (uint32, error) {
	i, ok := m.slots.allocate()
	if !ok {
		return 0, newError(ErrExhausted, "could not find an empty slot to allocate a user namespace")
	}
	first := (m.off + uint32(i)) * m.idsPerPod
	m.usedBy[uid] = first
	if err := m.write(uid, IDRange{First: first, Length: m.idsPerPod}); err != nil {
		if relErr := m.release(uid); relErr != nil {
			err = errors.Join(err, relErr)
		}
		return 0, err
	}
	logger.V(5).Info("New pod user namespace allocation", "first", first, "length", m.idsPerPod)
	return first, nil
}

// record registers the range r, read from the pod's MappingsFile, as the
// pod's; the messages are the kubelet's. The caller holds m.mu (or owns
// m, in New).
func (m *Manager) record(uid types.UID, r IDRange) error {
	if r.Length != m.idsPerPod {
		return newError(ErrInvalidMappings, "wrong user namespace length %v", r.Length)
	}
	if r.First%m.idsPerPod != 0 {
		return newError(ErrInvalidMappings, "wrong user namespace offset specified %v", r.First)
	}
	prev, found := m.usedBy[uid]
	if found && prev != r.First {
		return newError(ErrInvalidMappings, "different user namespace range already used by pod %q", uid)
	}
	i := m.slot(r.First)
	if i < 0 || i >= m.slots.n {
		return newError(ErrInvalidMappings, "id %v is out of range", r.First)
	}
	if found {
		return nil // already the pod's
	}
	if m.slots.has(i) {
		return newError(ErrInvalidMappings, "range picked for pod %q already taken", uid)
	}
	m.slots.set(i)
	m.usedBy[uid] = r.First
	return nil
}

// slot is the index of the range starting at first (a multiple of
// idsPerPod); negative below the range.
func (m *Manager) slot(first uint32) int {
	return int(first/m.idsPerPod) - int(m.off)
}

// Release frees the pod's range and removes its MappingsFile; call it once
// the pod is terminated (no sandbox or container of it left). A pod without
// a range is a no-op. If the file cannot be removed the range stays the
// pod's (on disk it still is) and the error is returned; Release or
// CleanupOrphans may be called again.
func (m *Manager) Release(ctx context.Context, uid types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.release(uid); err != nil {
		return err
	}
	klog.FromContext(ctx).V(5).Info("Released pod user namespace allocation", "podUID", uid)
	return nil
}

// release is Release with m.mu held.
func (m *Manager) release(uid types.UID) error {
	first, ok := m.usedBy[uid]
	if !ok {
		return nil
	}
	if err := m.removeMappings(uid); err != nil {
		return fmt.Errorf("userns: release pod %q: %w", uid, err)
	}
	delete(m.usedBy, uid)
	m.slots.clear(m.slot(first))
	return nil
}

// CleanupOrphans frees the ranges of pods that are gone (the kubelet's
// CleanupOrphanedPodUsernsAllocations, in housekeeping): those of pods
// with a directory that keep does not know, and those of pods whose
// directory is gone. keep reports the pods that may still use their range:
// every pod the agent knows (desired, terminating) and every pod the
// runtime still runs; nil keeps none. It has podhandler.OrphanCleaner's
// shape. Errors removing files are joined and returned; the other pods
// are still cleaned.
func (m *Manager) CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()

	found, err := m.cfg.listPodDirs()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("userns: read pods from disk: %w", err)
	}
	onDisk := make(map[types.UID]bool, len(found))
	var errs []error
	for _, uid := range found {
		onDisk[uid] = true
		if _, ok := m.usedBy[uid]; !ok || (keep != nil && keep(uid)) {
			continue
		}
		logger.V(5).Info("Clean up orphaned pod user namespace allocation", "podUID", uid)
		if err := m.release(uid); err != nil {
			errs = append(errs, err)
		}
	}
	for uid := range m.usedBy {
		if onDisk[uid] {
			continue
		}
		logger.V(5).Info("Clean up orphaned pod user namespace allocation", "podUID", uid)
		if err := m.release(uid); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// userNamespace is the CRI user namespace of a pod whose range starts at
// first.
func userNamespace(first, length uint32) *runtimeapi.UserNamespace {
	return &runtimeapi.UserNamespace{
		Mode: runtimeapi.NamespaceMode_POD,
		Uids: []*runtimeapi.IDMapping{{HostId: first, ContainerId: 0, Length: length}},
		Gids: []*runtimeapi.IDMapping{{HostId: first, ContainerId: 0, Length: length}},
	}
}

package imagegc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/internal/parking"
)

// The kubelet's defaults (KubeletConfiguration v1beta1).
const (
	// DefaultHighThresholdPercent is imageGCHighThresholdPercent.
	DefaultHighThresholdPercent = 85
	// DefaultLowThresholdPercent is imageGCLowThresholdPercent.
	DefaultLowThresholdPercent = 80
	// DefaultMinAge is imageMinimumGCAge.
	DefaultMinAge = 2 * time.Minute
	// DefaultPeriod is the kubelet's ImageGCPeriod.
	DefaultPeriod = 5 * time.Minute
)

// Reasons of kubelet_image_garbage_collected_total and the events.
const (
	ReasonAge   = "age"
	ReasonSpace = "space"

	EventImageGCFailed       = "ImageGCFailed"
	EventFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	EventInvalidDiskCapacity = "InvalidDiskCapacity"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("imagegc: invalid config")

// Images is the part of the CRI image service the collector uses; a
// criapi.ImageManagerService implements it.
type Images interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
}

// Containers is the part of the CRI runtime service the collector uses to
// find the images in use; a criapi.RuntimeService implements it.
type Containers interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// FsStats are the image filesystem's size and free bytes.
type FsStats struct {
	CapacityBytes, AvailableBytes uint64
}

// Config configures a Manager. Images, Containers and ImageFs are
// required; zero values of the rest are the kubelet's defaults.
type Config struct {
	Images     Images
	Containers Containers
	// ImageFs reads the image filesystem's capacity and free bytes.
	ImageFs func(ctx context.Context) (FsStats, error)

	// HighThresholdPercent of image filesystem usage starts a collection
	// (0: DefaultHighThresholdPercent; 100 with LowThresholdPercent 100
	// never collects for space); LowThresholdPercent is where it stops
	// (0: DefaultLowThresholdPercent). Both in [0, 100], Low ≤ High.
	HighThresholdPercent, LowThresholdPercent int
	// MinAge: an image detected less than this ago is never removed
	// (0: DefaultMinAge; negative: none).
	MinAge time.Duration
	// MaxAge: an image unused for longer than this is removed whatever
	// the usage (0: never, the kubelet's default).
	MaxAge time.Duration
	// Period between Run's passes (0: DefaultPeriod).
	Period time.Duration

	// Recorder receives the kubelet's events on NodeRef; nil drops them.
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
	// Registerer receives kubelet_image_garbage_collected_total{reason};
	// nil: none.
	Registerer prometheus.Registerer
	// Clock times passes, ages and Run; nil is the real clock.
	Clock clock.WithTicker
}

// record is what is known of one image.
type imageRecord struct {
	firstDetected, lastUsed time.Time
	size                    uint64
	pinned                  bool
}

// Manager collects unused images. Build it with New.
type Manager struct {
	cfg       Config
	began     time.Time
	collected *prometheus.CounterVec

	pass    sync.Mutex // one pass at a time
	mu      sync.Mutex // records
	records map[string]*imageRecord
	parked  parking.State
}

// New validates cfg and returns a Manager; no I/O. The collector's start,
// from which MaxAge is first counted, is now.
func New(cfg Config) (*Manager, error) {
	if cfg.Images == nil || cfg.Containers == nil || cfg.ImageFs == nil {
		return nil, fmt.Errorf("%w: Images, Containers and ImageFs are required", ErrInvalidConfig)
	}
	if cfg.HighThresholdPercent == 0 {
		cfg.HighThresholdPercent = DefaultHighThresholdPercent
	}
	if cfg.LowThresholdPercent == 0 {
		cfg.LowThresholdPercent = DefaultLowThresholdPercent
	}
	switch {
	case cfg.HighThresholdPercent < 0 || cfg.HighThresholdPercent > 100:
		return nil, fmt.Errorf("%w: HighThresholdPercent %d must be in [0, 100]", ErrInvalidConfig, cfg.HighThresholdPercent)
	case cfg.LowThresholdPercent < 0 || cfg.LowThresholdPercent > 100:
		return nil, fmt.Errorf("%w: LowThresholdPercent %d must be in [0, 100]", ErrInvalidConfig, cfg.LowThresholdPercent)
	case cfg.LowThresholdPercent > cfg.HighThresholdPercent:
		return nil, fmt.Errorf("%w: LowThresholdPercent %d can not be higher than HighThresholdPercent %d", ErrInvalidConfig, cfg.LowThresholdPercent, cfg.HighThresholdPercent)
	case cfg.MaxAge < 0:
		return nil, fmt.Errorf("%w: MaxAge %v is negative", ErrInvalidConfig, cfg.MaxAge)
	case cfg.Period < 0:
		return nil, fmt.Errorf("%w: Period %v is negative", ErrInvalidConfig, cfg.Period)
	case cfg.MaxAge > 0 && cfg.MinAge > cfg.MaxAge:
		return nil, fmt.Errorf("%w: MinAge %v must not exceed MaxAge %v", ErrInvalidConfig, cfg.MinAge, cfg.MaxAge)
	}
	switch {
	case cfg.MinAge == 0:
		cfg.MinAge = DefaultMinAge
	case cfg.MinAge < 0:
		cfg.MinAge = 0
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m := &Manager{cfg: cfg, began: cfg.Clock.Now(), records: map[string]*imageRecord{},
		collected: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "image_garbage_collected_total",
			Help: "[ALPHA] Total number of images garbage collected by the kubelet, whether through disk usage or image age."}, []string{"reason"})}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(m.collected); err != nil {
			return nil, fmt.Errorf("%w: metrics: %w", ErrInvalidConfig, err)
		}
	}
	return m, nil
}

// candidate is an unused, unpinned image in eviction order.
type candidate struct {
	id string
	imageRecord
}

// detect updates the records from the runtime at now and returns the
// unused, unpinned images, least recently used first.
func (m *Manager) detect(ctx context.Context, now time.Time) ([]candidate, error) {
	images, err := m.cfg.Images.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	containers, err := m.cfg.Containers.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	inUse := map[string]bool{}
	for _, c := range containers {
		inUse[c.GetImageRef()] = true
		// An image volume keeps its image in use too.
		st, err := m.cfg.Containers.ContainerStatus(ctx, c.GetId(), false)
		if err != nil {
			continue // gone since the list: its image is not held by it any more
		}
		for _, mnt := range st.GetStatus().GetMounts() {
			if ref := mnt.GetImage().GetImage(); ref != "" {
				inUse[ref] = true
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	present := make(map[string]bool, len(images))
	for _, img := range images {
		id := img.GetId()
		present[id] = true
		r := m.records[id]
		if r == nil {
			r = &imageRecord{firstDetected: now}
			m.records[id] = r
		}
		if inUse[id] {
			r.lastUsed = now
		}
		r.size, r.pinned = img.GetSize(), img.GetPinned()
	}
	var out []candidate
	for id, r := range m.records {
		switch {
		case !present[id]:
			delete(m.records, id)
		case !inUse[id] && !r.pinned:
			out = append(out, candidate{id: id, imageRecord: *r})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].lastUsed.Equal(out[j].lastUsed) {
			return out[i].firstDetected.Before(out[j].firstDetected)
		}
		return out[i].lastUsed.Before(out[j].lastUsed)
	})
	return out, nil
}

// remove removes one image and forgets its record.
func (m *Manager) remove(ctx context.Context, c candidate, reason string) error {
	klog.FromContext(ctx).Info("Removing image to free bytes", "imageID", c.id, "size", c.size, "reason", reason)
	if err := m.cfg.Images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: c.id}); err != nil {
		return fmt.Errorf("remove image %s: %w", c.id, err)
	}
	m.mu.Lock()
	delete(m.records, c.id)
	m.mu.Unlock()
	m.collected.WithLabelValues(reason).Inc()
	return nil
}

// freeSpace removes images in order, none used at or after now nor
// detected less than MinAge ago, until toFree bytes are freed; it returns
// what it freed.
func (m *Manager) freeSpace(ctx context.Context, toFree uint64, now time.Time, images []candidate) (uint64, error) {
	var freed uint64
	var errs []error
	for _, c := range images {
		if !c.lastUsed.Before(now) || now.Sub(c.firstDetected) < m.cfg.MinAge {
			continue
		}
		if err := m.remove(ctx, c, ReasonSpace); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += c.size
		if freed >= toFree {
			break
		}
	}
	if len(errs) > 0 {
		return freed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", toFree, freed, errors.Join(errs...))
	}
	return freed, nil
}

// GarbageCollect is one pass: images unused for longer than MaxAge go,
// then, over HighThresholdPercent, the least recently used until usage is
// at LowThresholdPercent. It fails when the images or the image
// filesystem cannot be read, a removal fails, or not enough could be
// freed (with the kubelet's FreeDiskSpaceFailed event).
func (m *Manager) GarbageCollect(ctx context.Context) error {
	m.pass.Lock()
	defer m.pass.Unlock()
	now := m.cfg.Clock.Now()
	images, err := m.detect(ctx, now)
	if err != nil {
		return err
	}
	if images, err = m.freeOld(ctx, images, now); err != nil {
		return err
	}
	fs, err := m.cfg.ImageFs(ctx)
	if err != nil {
		return fmt.Errorf("image filesystem stats: %w", err)
	}
	capacity, available := fs.CapacityBytes, min(fs.AvailableBytes, fs.CapacityBytes)
	if capacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		m.event(EventInvalidDiskCapacity, err.Error())
		return err
	}
	usage := 100 - int(available*100/capacity)
	if usage < m.cfg.HighThresholdPercent {
		return nil
	}
	target := capacity * uint64(100-m.cfg.LowThresholdPercent) / 100
	if target <= available {
		return nil
	}
	toFree := target - available
	klog.FromContext(ctx).Info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", usage, "highThreshold", m.cfg.HighThresholdPercent, "amountToFree", toFree, "lowThreshold", m.cfg.LowThresholdPercent)
	freed, err := m.freeSpace(ctx, toFree, now, images)
	if err != nil {
		return err
	}
	if freed < toFree {
		msg := fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+
			"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
			"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
			usage, formatSize(capacity), freed)
		m.event(EventFreeDiskSpaceFailed, msg)
		return errors.New(msg)
	}
	return nil
}

// freeOld removes the images unused for longer than MaxAge, once MaxAge
// has passed since the collector started, and returns the rest.
func (m *Manager) freeOld(ctx context.Context, images []candidate, now time.Time) ([]candidate, error) {
	if m.cfg.MaxAge == 0 || now.Sub(m.began) <= m.cfg.MaxAge {
		return images, nil
	}
	var rest []candidate
	var errs []error
	for _, c := range images {
		if now.Sub(c.lastUsed) <= m.cfg.MaxAge {
			rest = append(rest, c)
			continue
		}
		if err := m.remove(ctx, c, ReasonAge); err != nil {
			errs = append(errs, err)
			rest = append(rest, c)
		}
	}
	if len(errs) > 0 {
		return rest, fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w", m.cfg.MaxAge, errors.Join(errs...))
	}
	return rest, nil
}

// DeleteUnusedImages removes every unused, unpinned image detected at
// least MinAge ago (the eviction manager's reclaim of image space).
func (m *Manager) DeleteUnusedImages(ctx context.Context) error {
	m.pass.Lock()
	defer m.pass.Unlock()
	klog.FromContext(ctx).Info("Attempting to delete unused images")
	now := m.cfg.Clock.Now()
	images, err := m.detect(ctx, now)
	if err != nil {
		return err
	}
	_, err = m.freeSpace(ctx, math.MaxUint64, now, images)
	return err
}

// Run makes a pass at once and then every Period until ctx is done; it
// returns nil then. A pass that fails right after another failed one
// records ImageGCFailed on the Node (the first may be the image
// filesystem's stats not being ready yet, as the kubelet allows).
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	failed := false
	m.parked.Every(ctx, m.cfg.Clock, m.cfg.Period, func() {
		err := m.GarbageCollect(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil && failed:
			logger.Error(err, "Image garbage collection failed multiple times in a row")
			m.event(EventImageGCFailed, err.Error())
		case err != nil:
			logger.Error(err, "Image garbage collection failed once. Stats initialization may not have completed yet")
			failed = true
		case failed:
			failed = false
			logger.V(1).Info("Image garbage collection succeeded")
		default:
			logger.V(4).Info("Image garbage collection succeeded")
		}
	})
	return nil
}

// NextWake tells when Run's next pass is due while Run waits for it
// (clockdrive.Waker); ok is false during a pass and when Run is not
// running.
func (m *Manager) NextWake() (next time.Time, ok bool) { return m.parked.Next() }

func (m *Manager) event(reason, msg string) {
	if m.cfg.Recorder != nil && m.cfg.NodeRef != nil {
		m.cfg.Recorder.Event(m.cfg.NodeRef, v1.EventTypeWarning, reason, msg)
	}
}

// formatSize is a size as the kubelet's events write it.
func formatSize(b uint64) string {
	const k = 1024
	size := float64(b)
	switch {
	case size < k:
		return fmt.Sprintf("%d B", b)
	case size < k*k:
		return fmt.Sprintf("%.1f KiB", size/k)
	case size < k*k*k:
		return fmt.Sprintf("%.1f MiB", size/(k*k))
	case size < k*k*k*k:
		return fmt.Sprintf("%.1f GiB", size/(k*k*k))
	}
	return fmt.Sprintf("%.1f TiB", size/(k*k*k*k))
}

package syncloop

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	utilio "k8s.io/utils/io"

	"github.com/nodekit/nodekit/internal/parking"
	"github.com/nodekit/nodekit/kubetypes"
)

// Defaults of the static pod sources.
const (
	// DefaultFileCheckPeriod is how often the file source stats the
	// manifest directory for changes.
	DefaultFileCheckPeriod = time.Second
	// DefaultResyncPeriod is upstream's file and HTTP check frequency: the
	// period of a full re-read.
	DefaultResyncPeriod = 20 * time.Second
)

// FileSourceConfig configures a FileSource.
type FileSourceConfig struct {
	// Path is the manifest directory (upstream's staticPodPath), or a single
	// manifest file; required. In a directory, files whose names start
	// with "." and subdirectories are ignored.
	Path string
	// NodeName is the node the static pods run on; required.
	NodeName string
	// CheckPeriod is how often the directory is stat'ed for changed,
	// added or removed files, which are then re-read; default 1s.
	CheckPeriod time.Duration
	// ResyncPeriod is how often every file is re-read regardless; default
	// 20s.
	ResyncPeriod time.Duration
	// Recorder receives a Warning FailedValidation event on the Node for
	// each invalid manifest. Optional.
	Recorder record.EventRecorder
	// Clock drives both periods; default the real clock.
	Clock clock.WithTicker
}

// FileSource reads static pod manifests (YAML or JSON, one v1 Pod each)
// from a directory. An invalid manifest is reported (log and event) and the
// last valid version of that file is kept, so a bad edit never stops a
// running pod; other files are unaffected.
type FileSource struct {
	cfg    FileSourceConfig
	files  map[string]*manifestFile
	parked parking.State // Run's state for NextWake
}

type manifestFile struct {
	size    int64
	modTime time.Time
	sum     uint64 // of the content last parsed
	parsed  bool
	pod     *v1.Pod // last valid version, nil if none
}

// NewFileSource validates cfg and returns a FileSource.
func NewFileSource(cfg FileSourceConfig) (*FileSource, error) {
	if cfg.Path == "" {
		return nil, fmt.Errorf("%w: FileSourceConfig.Path is required", ErrInvalidConfig)
	}
	if cfg.NodeName == "" {
		return nil, fmt.Errorf("%w: FileSourceConfig.NodeName is required", ErrInvalidConfig)
	}
	if cfg.CheckPeriod == 0 {
		cfg.CheckPeriod = DefaultFileCheckPeriod
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	if cfg.CheckPeriod < 0 || cfg.ResyncPeriod < 0 {
		return nil, fmt.Errorf("%w: FileSourceConfig periods must be positive", ErrInvalidConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	cfg.Path = filepath.Clean(cfg.Path)
	return &FileSource{cfg: cfg, files: map[string]*manifestFile{}}, nil
}

// Name returns kubetypes.FileSource ("file").
func (s *FileSource) Name() string { return kubetypes.FileSource }

// Run scans at once, then every CheckPeriod (a full re-read every
// ResyncPeriod), and sends a snapshot after the first scan and after each
// change. It returns nil when ctx is done.
func (s *FileSource) Run(ctx context.Context, set SetFunc) error {
	logger := klog.FromContext(ctx)
	logger.V(1).Info("Watching path", "path", s.cfg.Path)
	scan := func(full bool, first bool) {
		changed, err := s.Scan(ctx, full)
		if err != nil {
			logger.Error(err, "Unable to read config path", "path", s.cfg.Path)
		}
		if changed || first {
			set(ctx, s.Pods())
		}
	}
	scan(true, true)
	started := s.cfg.Clock.Now()
	nextFull := started.Add(s.cfg.ResyncPeriod)
	t := s.cfg.Clock.NewTicker(s.cfg.CheckPeriod)
	defer t.Stop()
	defer s.parked.Park(time.Time{}, false, false)
	for {
		s.parked.Park(parking.TickAfter(started, s.cfg.Clock.Now(), s.cfg.CheckPeriod), false, false)
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C():
			s.parked.Park(time.Time{}, false, false)
			full := !now.Before(nextFull)
			if full {
				nextFull = nextTick(nextFull, now, s.cfg.ResyncPeriod)
			}
			scan(full, false)
		}
	}
}

// NextWake tells when Run next scans the directory, on Config.Clock, while
// Run waits for it; ok is false while a scan runs or Run is not running. A
// test on a fake clock waits until ok before stepping the clock to next.
//
// A next not after the clock's now means the timer has fired and Run is
// about to wake: not parked yet, ask again. Package clockdrive steps a fake
// clock over these methods.
func (s *FileSource) NextWake() (next time.Time, ok bool) { return s.parked.Next() }

// Scan is the synchronous core of the source: it stats the manifests and
// re-reads those that changed (every one if full). It reports whether the
// set of valid pods changed. Invalid manifests are logged and reported as
// events, not returned; the error is for a path that cannot be read at all
// (a missing path counts as empty). Scan must not be called concurrently.
func (s *FileSource) Scan(ctx context.Context, full bool) (changed bool, err error) {
	paths, err := s.list()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			changed = len(s.files) > 0
			clear(s.files)
			return changed, fmt.Errorf("path does not exist, ignoring: %w", err)
		}
		return false, err
	}
	present := make(map[string]bool, len(paths))
	for _, p := range paths {
		present[p] = true
		if s.scanFile(ctx, p, full) {
			changed = true
		}
	}
	for p, f := range s.files {
		if !present[p] {
			delete(s.files, p)
			if f.pod != nil {
				changed = true
			}
		}
	}
	return changed, nil
}

// list returns the visible regular files under Path, sorted.
func (s *FileSource) list() ([]string, error) {
	info, err := os.Stat(s.cfg.Path)
	if err != nil {
		return nil, err
	}
	if info.Mode().IsRegular() {
		return []string{s.cfg.Path}, nil
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory or regular file", s.cfg.Path)
	}
	entries, err := os.ReadDir(s.cfg.Path)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		paths = append(paths, filepath.Join(s.cfg.Path, e.Name()))
	}
	return paths, nil
}

// scanFile refreshes one file's entry and reports whether its valid pod
// changed.
func (s *FileSource) scanFile(ctx context.Context, path string, full bool) bool {
	logger := klog.FromContext(ctx)
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			logger.Error(err, "Could not get metadata", "path", path)
		}
		return false // treated as absent by the caller only if it disappears from the listing
	}
	f := s.files[path]
	if f == nil {
		f = &manifestFile{}
		s.files[path] = f
	} else if !full && f.size == info.Size() && f.modTime.Equal(info.ModTime()) {
		return false
	}
	f.size, f.modTime = info.Size(), info.ModTime()
	data, err := readFile(path)
	if err != nil {
		logger.Error(err, "Could not read manifest file", "path", path)
		return false
	}
	h := fnv.New64a()
	h.Write(data)
	sum := h.Sum64()
	if f.parsed && sum == f.sum {
		return false
	}
	f.sum, f.parsed = sum, true
	pod, err := parseStaticPod(path, data, s.cfg.NodeName, kubetypes.FileSource)
	if err != nil {
		reportManifestError(ctx, s.cfg.Recorder, s.cfg.NodeName, err, f.pod != nil)
		return false
	}
	f.pod = pod
	return true
}

func readFile(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }() // read-only: a close error cannot lose data
	return utilio.ReadAtMost(file, maxManifestBytes)
}

// Pods returns deep copies of the valid pods, in file name order.
func (s *FileSource) Pods() []*v1.Pod {
	paths := make([]string, 0, len(s.files))
	for p, f := range s.files {
		if f.pod != nil {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	pods := make([]*v1.Pod, len(paths))
	for i, p := range paths {
		pods[i] = s.files[p].pod.DeepCopy()
	}
	return pods
}

// parseStaticPod decodes one manifest holding a single pod and prepares
// it as a static pod.
func parseStaticPod(location string, data []byte, nodeName, source string) (*v1.Pod, error) {
	pods, err := decodeManifest(location, data)
	if err != nil {
		return nil, err
	}
	if len(pods) != 1 {
		return nil, &ManifestError{Location: location, Err: fmt.Errorf("a manifest file must hold one Pod, found %d", len(pods))}
	}
	return preparePod(location, pods[0], nodeName, source)
}

func preparePod(location string, pod *v1.Pod, nodeName, source string) (*v1.Pod, error) {
	name := pod.Name
	if errs := staticPod(pod, nodeName, source); len(errs) > 0 {
		return nil, &ManifestError{Location: location, Pod: name, Fields: errs}
	}
	return pod, nil
}

// reportManifestError logs an invalid manifest and records an event on the
// node.
func reportManifestError(ctx context.Context, rec record.EventRecorder, nodeName string, err error, keptOld bool) {
	klog.FromContext(ctx).Error(err, "Invalid static pod manifest, ignoring it", "keptPreviousVersion", keptOld)
	if rec != nil {
		ref := &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: typesUID(nodeName)}
		rec.Eventf(ref, v1.EventTypeWarning, eventFailedValidation, "%v", err)
	}
}

package crisim

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Default values used when the corresponding Config field is zero.
const (
	DefaultRuntimeName     = "crisim"
	DefaultRuntimeVersion  = "0.1.0"
	DefaultImageSize       = 10 << 20
	DefaultEventBuffer     = 256
	DefaultStreamChunkSize = 100
	DefaultShutdownGrace   = 5 * time.Second
	DefaultStreamingAddr   = "127.0.0.1:0"
)

const (
	imageFsMountpoint     = "/var/lib/crisim/images"
	containerFsMountpoint = "/var/lib/crisim/containers"
	kubeletAPIVersion     = "0.1.0"
	criAPIVersion         = "v1"

	exitCodeKilled     = 137
	exitCodeStartError = 128
	reasonCompleted    = "Completed"
	reasonError        = "Error"
	reasonStartError   = "StartError"
)

// Config configures a Sim. The zero value is usable.
type Config struct {
	// Clock drives every timestamp and timer of the simulation.
	// Defaults to clock.RealClock{}.
	Clock clock.WithTicker
	// RuntimeName and RuntimeVersion are reported by Version.
	// They default to DefaultRuntimeName and DefaultRuntimeVersion.
	RuntimeName    string
	RuntimeVersion string
	// CgroupDriver is reported by RuntimeConfig (zero value: systemd).
	CgroupDriver runtimeapi.CgroupDriver
	// Images are present before the first PullImage.
	Images []Image
	// DefaultImageSize is the size in bytes of pulled images and of Images
	// entries without a size. Defaults to DefaultImageSize.
	DefaultImageSize uint64
	// EventBuffer is how many GetContainerEvents events may be queued for
	// one subscriber before it is dropped. Defaults to DefaultEventBuffer.
	EventBuffer int
	// StreamChunkSize is the maximum number of items per message sent by
	// the Stream* list RPCs. Defaults to DefaultStreamChunkSize.
	StreamChunkSize int
	// ShutdownGrace bounds, in real time, how long the stop function of
	// ListenAndServe waits for a graceful stop before forcing it.
	// Defaults to DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// StreamingAddr is the TCP address ("host:port") of the HTTP server
	// behind the Exec, Attach and PortForward URLs. It is started by the
	// first of those RPCs and stopped with the gRPC server. Defaults to
	// DefaultStreamingAddr, a free port on the loopback interface.
	StreamingAddr string
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.RuntimeName == "" {
		c.RuntimeName = DefaultRuntimeName
	}
	if c.RuntimeVersion == "" {
		c.RuntimeVersion = DefaultRuntimeVersion
	}
	if c.DefaultImageSize == 0 {
		c.DefaultImageSize = DefaultImageSize
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = DefaultEventBuffer
	}
	if c.StreamChunkSize <= 0 {
		c.StreamChunkSize = DefaultStreamChunkSize
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.StreamingAddr == "" {
		c.StreamingAddr = DefaultStreamingAddr
	}
	return c
}

// Sim is an in-memory CRI runtime and image service. Its methods configure
// and drive the simulation; the CRI itself is reached over gRPC, see
// ListenAndServe. All methods are safe for concurrent use.
type Sim struct {
	cfg   Config
	clock clock.WithTicker

	mu         sync.Mutex
	seq        uint64
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]*image
	scripts    []scriptRule
	execs      []execRule
	logs       []logRule
	forwards   []forwardRule
	faults     map[string]*faultState
	calls      map[string]int
	conditions []*runtimeapi.RuntimeCondition
	imageFs    *FsUsage
	subs       map[*subscriber]struct{}
	// scriptedPods are the pod UID/container pairs ScriptFromPod did.
	scriptedPods map[string]bool
}

// New returns a Sim with no pods, the images of cfg.Images, and healthy
// RuntimeReady and NetworkReady conditions.
func New(cfg Config) *Sim {
	cfg = cfg.withDefaults()
	s := &Sim{
		cfg:        cfg,
		clock:      cfg.Clock,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		images:     map[string]*image{},
		faults:     map[string]*faultState{},
		calls:      map[string]int{},
		subs:       map[*subscriber]struct{}{},
		conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		},
	}
	for _, img := range cfg.Images {
		s.addImageLocked(img)
	}
	return s
}

// nextLocked returns the next value of the sequence that orders objects and
// derives their IDs.
func (s *Sim) nextLocked() uint64 {
	s.seq++
	return s.seq
}

// newIDLocked returns a deterministic 64-hex-digit ID, like the ones real
// runtimes hand out, derived from the sequence number.
func (s *Sim) newIDLocked(kind string) (string, uint64) {
	n := s.nextLocked()
	sum := sha256.Sum256([]byte("crisim/" + kind + "/" + strconv.FormatUint(n, 10)))
	return hex.EncodeToString(sum[:]), n
}

// nowNano is the current simulated time in nanoseconds since the epoch.
func (s *Sim) nowNano() int64 {
	return s.clock.Now().UnixNano()
}

func notFound(kind, id string) error {
	return status.Errorf(codes.NotFound, "%s %q not found", kind, id)
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

func precondition(format string, args ...any) error {
	return status.Errorf(codes.FailedPrecondition, format, args...)
}

// matchLabels reports whether labels contain every pair of selector.
func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

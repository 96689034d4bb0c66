package syncloop

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
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

// DefaultHTTPTimeout is upstream's timeout for reading the manifest URL.
const DefaultHTTPTimeout = 10 * time.Second

// HTTPSourceConfig configures an HTTPSource.
type HTTPSourceConfig struct {
	// URL serves a v1 Pod or a v1 PodList, as YAML or JSON (upstream's
	// manifest URL); required.
	URL string
	// Header is sent with every request (upstream's manifest URL header).
	Header http.Header
	// NodeName is the node the static pods run on; required.
	NodeName string
	// Period is how often the URL is read; default 20s.
	Period time.Duration
	// Client makes the requests; default a client with a 10s timeout
	// (net/http times out on real time).
	Client *http.Client
	// Recorder receives a Warning FailedValidation event on the Node for
	// each invalid pod. Optional.
	Recorder record.EventRecorder
	// Clock drives the period; default the real clock.
	Clock clock.WithTicker
}

// HTTPSource reads static pods from a URL. A response that is not 200, or
// cannot be decoded, is reported and the previous pods are kept; an invalid
// pod of a list is reported and its previous valid version, if any, kept,
// while the other pods are applied.
type HTTPSource struct {
	cfg         HTTPSourceConfig
	data        []byte
	pods        []*v1.Pod
	failureLogs int
	parked      parking.State // Run's state for NextWake
}

// NewHTTPSource validates cfg and returns an HTTPSource.
func NewHTTPSource(cfg HTTPSourceConfig) (*HTTPSource, error) {
	if cfg.URL == "" {
		return nil, fmt.Errorf("%w: HTTPSourceConfig.URL is required", ErrInvalidConfig)
	}
	if cfg.NodeName == "" {
		return nil, fmt.Errorf("%w: HTTPSourceConfig.NodeName is required", ErrInvalidConfig)
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultResyncPeriod
	}
	if cfg.Period < 0 {
		return nil, fmt.Errorf("%w: HTTPSourceConfig.Period %v is negative", ErrInvalidConfig, cfg.Period)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &HTTPSource{cfg: cfg}, nil
}

// Name returns kubetypes.HTTPSource ("http").
func (s *HTTPSource) Name() string { return kubetypes.HTTPSource }

// Run fetches at once and then every Period, sending a snapshot after each
// fetch that changed the pods. It returns nil when ctx is done.
func (s *HTTPSource) Run(ctx context.Context, set SetFunc) error {
	logger := klog.FromContext(ctx)
	logger.V(1).Info("Watching URL", "URL", s.cfg.URL)
	started := s.cfg.Clock.Now()
	t := s.cfg.Clock.NewTicker(s.cfg.Period)
	defer t.Stop()
	defer s.parked.Park(time.Time{}, false, false)
	for {
		changed, err := s.Fetch(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			// Like upstream, the first few failures are logged loudly.
			if s.failureLogs < 3 {
				logger.Error(err, "Failed to read pods from URL")
			} else {
				logger.V(4).Info("Failed to read pods from URL", "err", err)
			}
			s.failureLogs++
		case err == nil && s.failureLogs > 0:
			logger.Info("Successfully read pods from URL")
			s.failureLogs = 0
		}
		if changed {
			set(ctx, s.Pods())
		}
		s.parked.Park(parking.TickAfter(started, s.cfg.Clock.Now(), s.cfg.Period), false, false)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			s.parked.Park(time.Time{}, false, false)
		}
	}
}

// NextWake tells when Run next fetches the URL, on Config.Clock, while
// Run waits for it; ok is false while a fetch runs or Run is not running. A
// test on a fake clock waits until ok before stepping the clock to next.
//
// A next not after the clock's now means the timer has fired and Run is
// about to wake: not parked yet, ask again. Package clockdrive steps a fake
// clock over these methods.
func (s *HTTPSource) NextWake() (next time.Time, ok bool) { return s.parked.Next() }

// Fetch is the synchronous core: one GET. It reports whether the pods
// changed (including an empty body, which means no pods and makes the source
// ready). Invalid pods are logged and reported as events, not returned.
// Fetch must not be called concurrently.
func (s *HTTPSource) Fetch(ctx context.Context) (changed bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return false, err
	}
	if s.cfg.Header != nil {
		req.Header = s.cfg.Header.Clone()
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }() // the body was read; nothing to lose
	data, err := utilio.ReadAtMost(resp.Body, maxManifestBytes)
	if err != nil {
		return false, fmt.Errorf("%s: %w", s.cfg.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s: %s", s.cfg.URL, resp.Status)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		s.data, s.pods = nil, []*v1.Pod{}
		return true, fmt.Errorf("zero-length data received from %s", s.cfg.URL)
	}
	if bytes.Equal(data, s.data) {
		return false, nil
	}
	decoded, err := decodeManifest(s.cfg.URL, data)
	if err != nil {
		return false, err
	}
	s.data = data
	s.pods = s.prepare(ctx, decoded)
	return true, nil
}

// prepare turns decoded pods into static pods, keeping the previous valid
// version of any that is now invalid.
func (s *HTTPSource) prepare(ctx context.Context, decoded []*v1.Pod) []*v1.Pod {
	prev := make(map[string]*v1.Pod, len(s.pods))
	for _, p := range s.pods {
		prev[p.Name] = p
	}
	out := make([]*v1.Pod, 0, len(decoded))
	for _, d := range decoded {
		generated := d.Name + "-" + strings.ToLower(s.cfg.NodeName)
		pod, err := preparePod(s.cfg.URL, d, s.cfg.NodeName, kubetypes.HTTPSource)
		if err != nil {
			old, kept := prev[generated]
			reportManifestError(ctx, s.cfg.Recorder, s.cfg.NodeName, err, kept)
			if kept {
				out = append(out, old)
			}
			continue
		}
		out = append(out, pod)
	}
	return out
}

// Pods returns deep copies of the current pods.
func (s *HTTPSource) Pods() []*v1.Pod {
	out := make([]*v1.Pod, len(s.pods))
	for i, p := range s.pods {
		out[i] = p.DeepCopy()
	}
	return out
}

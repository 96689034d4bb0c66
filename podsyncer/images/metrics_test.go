package images

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// slowImages is fakeImages whose pulls take step on clk and whose images
// have the sizes in sizes.
type slowImages struct {
	*fakeImages
	clk   *clocktesting.FakeClock
	step  time.Duration
	sizes map[string]uint64
}

func (s *slowImages) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, a *runtimeapi.AuthConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	s.clk.Step(s.step)
	return s.fakeImages.PullImage(ctx, spec, a, sb)
}

func (s *slowImages) ImageStatus(ctx context.Context, spec *runtimeapi.ImageSpec, v bool) (*runtimeapi.ImageStatusResponse, error) {
	r, err := s.fakeImages.ImageStatus(ctx, spec, v)
	if img := r.GetImage(); img != nil {
		img.Size = s.sizes[strings.TrimPrefix(spec.Image, "sha256:")]
	}
	return r, err
}

func TestSizeBucket(t *testing.T) {
	for size, want := range map[uint64]string{
		0: "N/A", 1: "0-10MB", 10 << 20: "0-10MB", 10<<20 + 1: "10MB-100MB", 700 << 20: "500MB-1GB",
		1<<30 + 1: "1GB-5GB", 50 << 30: "40GB-60GB", 100 << 30: "60GB-100GB", 1 << 40: "GT100GB",
	} {
		assert.Equal(t, want, sizeBucket(size), "size %d", size)
	}
}

// TestPullDurationMetric: each successful pull is observed once, its
// wait and pull time truncated to the millisecond, under its image's
// size bucket; images already present and failed pulls are not.
func TestPullDurationMetric(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	f := &slowImages{fakeImages: &fakeImages{present: map[string]bool{"have:1": true}, want: ""}, clk: clk,
		step: 1500*time.Millisecond + 700*time.Microsecond, sizes: map[string]uint64{"big:1": 12 << 20}}
	reg := prometheus.NewPedanticRegistry()
	p, err := New(Config{Images: f, Clock: clk, Registerer: reg})
	require.NoError(t, err)
	ctx := context.Background()
	nop := func(Event) {}

	for _, image := range []string{"big:1", "unsized:1", "have:1"} {
		_, err := p.Ensure(ctx, request(image, v1.PullIfNotPresent, nil), nop)
		require.NoError(t, err)
	}
	f.down = true
	_, err = p.Ensure(ctx, request("broken:1", v1.PullIfNotPresent, nil), nop)
	require.Error(t, err)

	const want = `
# HELP kubelet_image_pull_duration_seconds [ALPHA] Duration in seconds to pull an image.
# TYPE kubelet_image_pull_duration_seconds histogram
`
	var b strings.Builder
	b.WriteString(want)
	for _, label := range []string{"10MB-100MB", "N/A"} {
		for _, le := range pullDurationBuckets {
			n := 1
			if le < 1.5 {
				n = 0
			}
			b.WriteString(`kubelet_image_pull_duration_seconds_bucket{image_size_in_bytes="` + label + `",le="` + strconv.FormatFloat(le, 'g', -1, 64) + `"} ` + strconv.Itoa(n) + "\n")
		}
		b.WriteString(`kubelet_image_pull_duration_seconds_bucket{image_size_in_bytes="` + label + `",le="+Inf"} 1` + "\n")
		b.WriteString(`kubelet_image_pull_duration_seconds_sum{image_size_in_bytes="` + label + `"} 1.5` + "\n")
		b.WriteString(`kubelet_image_pull_duration_seconds_count{image_size_in_bytes="` + label + `"} 1` + "\n")
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(b.String()), "kubelet_image_pull_duration_seconds"))

	_, err = New(Config{Images: f, Registerer: reg})
	assert.ErrorIs(t, err, ErrInvalidConfig, "a second registration is an error")
	assert.ErrorContains(t, err, "metrics")
}

package images

import (
	"github.com/prometheus/client_golang/prometheus"
)

// pullDurationBuckets are the kubelet's buckets of
// kubelet_image_pull_duration_seconds.
var pullDurationBuckets = []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// sizeBuckets are the kubelet's image_size_in_bytes label values, each
// for sizes above its lower bound.
var sizeBuckets = []struct {
	above uint64
	label string
}{
	{0, "0-10MB"},
	{10 << 20, "10MB-100MB"},
	{100 << 20, "100MB-500MB"},
	{500 << 20, "500MB-1GB"},
	{1 << 30, "1GB-5GB"},
	{5 << 30, "5GB-10GB"},
	{10 << 30, "10GB-20GB"},
	{20 << 30, "20GB-30GB"},
	{30 << 30, "30GB-40GB"},
	{40 << 30, "40GB-60GB"},
	{60 << 30, "60GB-100GB"},
	{100 << 30, "GT100GB"},
}

// sizeBucket is the image_size_in_bytes label of an image of size bytes:
// "N/A" when the size is unknown (0), as the kubelet's.
func sizeBucket(size uint64) string {
	if size == 0 {
		return "N/A"
	}
	for i := len(sizeBuckets) - 1; i >= 0; i-- {
		if size > sizeBuckets[i].above {
			return sizeBuckets[i].label
		}
	}
	return ""
}

// newPullDuration returns kubelet_image_pull_duration_seconds, registered
// on reg when it is not nil.
func newPullDuration(reg prometheus.Registerer) (*prometheus.HistogramVec, error) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "image_pull_duration_seconds",
		Help: "[ALPHA] Duration in seconds to pull an image.", Buckets: pullDurationBuckets}, []string{"image_size_in_bytes"})
	if reg != nil {
		if err := reg.Register(h); err != nil {
			return nil, err
		}
	}
	return h, nil
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

// paced calls f for 0..n-1: rate per second, each call in its own
// goroutine (a slow call does not hold the pace back), or, with rate 0,
// 10 at a time.
func paced(ctx context.Context, n int, rate float64, f func(i int) error) error {
	if rate <= 0 {
		return parallel(ctx, n, 10, f)
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range n {
		if i > 0 {
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			if err := f(i); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("item %d: %w", i, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

const sliMetric = "kubelet_pod_start_sli_duration_seconds"

// podStartSLI reads the node agent's pod start SLI histogram from its
// /metrics through the API server's node proxy.
func podStartSLI(ctx context.Context, cs kubernetes.Interface, node string) (Pct, int, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "metrics").DoRaw(ctx)
	if err != nil {
		return Pct{}, 0, err
	}
	buckets, count, err := parseHistogram(body, sliMetric)
	if err != nil {
		return Pct{}, 0, err
	}
	q := func(p float64) float64 { return histogramQuantile(p, buckets, count) * 1000 }
	return Pct{P50: q(0.5), P99: q(0.99), Max: q(1)}, count, nil
}

type bucket struct {
	le    float64 // upper bound, seconds; +Inf for the last
	count float64 // cumulative
}

// parseHistogram reads one unlabelled histogram from the Prometheus text
// format: its cumulative buckets (sorted by bound) and its count.
func parseHistogram(text []byte, name string) ([]bucket, int, error) {
	var out []bucket
	count := -1
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, name+"_bucket{"):
			i := strings.Index(line, `le="`)
			j := strings.Index(line, `"}`)
			if i < 0 || j < i {
				return nil, 0, fmt.Errorf("bad bucket line %q", line)
			}
			le, err := strconv.ParseFloat(line[i+4:j], 64)
			if err != nil {
				return nil, 0, fmt.Errorf("bucket bound in %q: %w", line, err)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(line[j+2:]), 64)
			if err != nil {
				return nil, 0, fmt.Errorf("bucket count in %q: %w", line, err)
			}
			out = append(out, bucket{le, v})
		case strings.HasPrefix(line, name+"_count "):
			v, err := strconv.ParseFloat(strings.TrimPrefix(line, name+"_count "), 64)
			if err != nil {
				return nil, 0, fmt.Errorf("count in %q: %w", line, err)
			}
			count = int(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	if count < 0 || len(out) == 0 {
		return nil, 0, fmt.Errorf("no histogram %s in the metrics", name)
	}
	slices.SortFunc(out, func(a, b bucket) int { return compareFloat(a.le, b.le) })
	return out, count, nil
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// histogramQuantile estimates the q-quantile as Prometheus'
// histogram_quantile: linear within the bucket that holds it, the lower
// bound of the +Inf bucket if it falls there.
func histogramQuantile(q float64, buckets []bucket, count int) float64 {
	if count == 0 || len(buckets) == 0 {
		return 0
	}
	rank := q * float64(count)
	lower, below := 0.0, 0.0
	for _, b := range buckets {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return lower
			}
			if b.count == below {
				return b.le
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return lower
}

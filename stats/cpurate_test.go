package stats

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNextCPURecord(t *testing.T) {
	const s = int64(time.Second)
	rec := func(at int64, usage uint64, rate *uint64) *cpuRecord {
		return &cpuRecord{sample: cpuSample{at, usage}, rate: rate}
	}
	for _, tc := range []struct {
		name     string
		prev     *cpuRecord
		sample   cpuSample
		want     cpuRecord
		wantRate *uint64
	}{
		{name: "first sample", sample: cpuSample{10 * s, 5e9},
			want: *rec(10*s, 5e9, nil)},
		{name: "one core over 10s", prev: rec(10*s, 5e9, nil), sample: cpuSample{20 * s, 15e9},
			want: *rec(20*s, 15e9, u64p(1e9)), wantRate: u64p(1e9)},
		{name: "idle", prev: rec(10*s, 5e9, u64p(7)), sample: cpuSample{20 * s, 5e9},
			want: *rec(20*s, 5e9, u64p(0)), wantRate: u64p(0)},
		{name: "a quarter core over 12s", prev: rec(0, 0, nil), sample: cpuSample{12 * s, 3e9},
			want: *rec(12*s, 3e9, u64p(250_000_000)), wantRate: u64p(250_000_000)},
		{name: "sooner than the interval: the cached rate", prev: rec(10*s, 5e9, u64p(42)), sample: cpuSample{15 * s, 9e9},
			want: *rec(10*s, 5e9, u64p(42)), wantRate: u64p(42)},
		{name: "sooner than the interval, no rate yet", prev: rec(10*s, 5e9, nil), sample: cpuSample{19 * s, 9e9},
			want: *rec(10*s, 5e9, nil)},
		{name: "the same sample again", prev: rec(10*s, 5e9, u64p(42)), sample: cpuSample{10 * s, 5e9},
			want: *rec(10*s, 5e9, u64p(42)), wantRate: u64p(42)},
		{name: "counter reset (restart)", prev: rec(10*s, 5e9, u64p(42)), sample: cpuSample{30 * s, 1e9},
			want: *rec(30*s, 1e9, nil)},
		{name: "counter reset within the interval", prev: rec(10*s, 5e9, u64p(42)), sample: cpuSample{11 * s, 1e9},
			want: *rec(11*s, 1e9, nil)},
		{name: "clock went back", prev: rec(10*s, 5e9, u64p(42)), sample: cpuSample{5 * s, 6e9},
			want: *rec(5*s, 6e9, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rate := nextCPURecord(tc.prev, tc.sample, 10*time.Second)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.wantRate, rate)
		})
	}
}

func TestCPURatesPrune(t *testing.T) {
	r := newCPURates(time.Second)
	p1 := r.begin()
	r.observe(p1, "a", cpuSample{0, 0})
	r.observe(p1, "b", cpuSample{0, 0})
	r.prune(p1)
	require.Equal(t, 2, r.len())

	// A pass that started later and saw "b" keeps it when an earlier one
	// prunes.
	p2, p3 := r.begin(), r.begin()
	r.observe(p3, "b", cpuSample{int64(time.Second), 1e9})
	r.observe(p2, "a", cpuSample{int64(time.Second), 1e9})
	r.prune(p2)
	require.Equal(t, 2, r.len())
	r.prune(p3)
	require.Equal(t, 1, r.len(), "a was not seen by the latest pass")

	rate := r.observe(r.begin(), "b", cpuSample{int64(3 * time.Second), 3e9})
	require.Equal(t, uint64(1e9), *rate)
	*rate = 0 // the caller's copy
	require.Equal(t, uint64(1e9), *r.observe(r.begin(), "b", cpuSample{int64(3 * time.Second), 3e9}))
}

func TestCPURatesConcurrent(t *testing.T) {
	r := newCPURates(0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				pass := r.begin()
				r.observe(pass, "k", cpuSample{int64(i+1) * int64(time.Second), uint64(i) * 1e9})
				r.observe(pass, string(rune('a'+g)), cpuSample{int64(i), uint64(i)})
				r.prune(pass)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, r.len(), 5)
}

package stats

import (
	"sync"
	"time"
)

// cpuSample is one reading of a cumulative CPU counter.
type cpuSample struct {
	// at is when the counter was read, in Unix nanoseconds.
	at int64
	// usage is the cumulative CPU time, in core-nanoseconds.
	usage uint64
}

// cpuRecord is what is cached for one counter: the sample the current
// rate ends at, and that rate (nil until two samples are far enough apart).
type cpuRecord struct {
	sample cpuSample
	rate   *uint64
}

// nextCPURecord is the CPU rate policy: given the cached record (nil if
// none) and a new sample, it returns the record to cache and the
// usageNanoCores to report.
//
//   - no record, a counter lower than the cached one (the counter was
//     reset: the cgroup or container was recreated) or a sample older
//     than the cached one (the runtime's clock went back): the sample
//     starts a new record and no rate is reported, never a negative or
//     huge one;
//   - the same instant, or less than minInterval after the cached sample:
//     the cached record stays and its rate (possibly nil) is reported, so
//     frequent callers neither shorten the window nor see spikes;
//   - otherwise the rate is the counter's increase over the interval.
func nextCPURecord(prev *cpuRecord, s cpuSample, minInterval time.Duration) (cpuRecord, *uint64) {
	if prev == nil || s.usage < prev.sample.usage || s.at < prev.sample.at {
		return cpuRecord{sample: s}, nil
	}
	dt := s.at - prev.sample.at
	if dt == 0 || dt < int64(minInterval) {
		return *prev, prev.rate
	}
	rate := uint64(float64(s.usage-prev.sample.usage) / float64(dt) * float64(time.Second))
	return cpuRecord{sample: s, rate: &rate}, &rate
}

// cpuRates caches one record per counter key. Records not observed in a
// pass are removed by prune, so vanished containers do not accumulate.
// Safe for concurrent use.
type cpuRates struct {
	minInterval time.Duration

	mu      sync.Mutex
	pass    uint64
	records map[string]*cpuEntry
}

type cpuEntry struct {
	cpuRecord
	seen uint64
}

func newCPURates(minInterval time.Duration) *cpuRates {
	return &cpuRates{minInterval: minInterval, records: make(map[string]*cpuEntry)}
}

// begin starts a pass and returns its number for observe and prune.
func (r *cpuRates) begin() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pass++
	return r.pass
}

// observe records a sample of key's counter in pass and returns the rate to
// report, a fresh pointer the caller may keep.
func (r *cpuRates) observe(pass uint64, key string, s cpuSample) *uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.records[key]
	var prev *cpuRecord
	if e != nil {
		prev = &e.cpuRecord
	} else {
		e = &cpuEntry{}
		r.records[key] = e
	}
	rec, rate := nextCPURecord(prev, s, r.minInterval)
	e.cpuRecord = rec
	e.seen = max(e.seen, pass)
	if rate == nil {
		return nil
	}
	v := *rate
	return &v
}

// prune removes the records no pass since pass has observed. A pass that
// started later and observed a record keeps it.
func (r *cpuRates) prune(pass uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.records {
		if e.seen < pass {
			delete(r.records, k)
		}
	}
}

// len is the number of cached records.
func (r *cpuRates) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.records)
}

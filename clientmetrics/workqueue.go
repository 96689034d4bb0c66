package clientmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// workqueueMetrics are component-base's work queue families, by queue
// name.
type workqueueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

func newWorkqueueMetrics() workqueueMetrics {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: name, Help: "[BETA] " + help}, []string{"name"})
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: name, Help: "[BETA] " + help}, []string{"name"})
	}
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: name, Help: "[BETA] " + help,
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 10)}, []string{"name"})
	}
	return workqueueMetrics{
		depth:   gauge("depth", "Current depth of workqueue"),
		adds:    counter("adds_total", "Total number of adds handled by workqueue"),
		latency: hist("queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested."),
		work:    hist("work_duration_seconds", "How long in seconds processing an item from workqueue takes."),
		unfinished: gauge("unfinished_work_seconds", "How many seconds of work has done that is in progress and hasn't been observed by work_duration. "+
			"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."),
		longest: gauge("longest_running_processor_seconds", "How many seconds has the longest running processor for workqueue been running."),
		retries: counter("retries_total", "Total number of retries handled by workqueue"),
	}
}

func (w workqueueMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{w.depth, w.adds, w.latency, w.work, w.unfinished, w.longest, w.retries}
}

// Workqueues returns the provider for k8s.io/client-go/util/workqueue.SetProvider,
// which the program's main calls once. Only named queues report.
func (m *Metrics) Workqueues() workqueue.MetricsProvider { return provider{m.wq} }

type provider struct{ w workqueueMetrics }

func (p provider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.w.depth.WithLabelValues(name)
}

func (p provider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.w.adds.WithLabelValues(name)
}

func (p provider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.w.latency.WithLabelValues(name)
}

func (p provider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.w.work.WithLabelValues(name)
}

func (p provider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.w.unfinished.WithLabelValues(name)
}

func (p provider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.w.longest.WithLabelValues(name)
}

func (p provider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.w.retries.WithLabelValues(name)
}

package kubeletapi

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/internal/cgroupstat"
)

// CadvisorConfig completes what /metrics/cadvisor cannot read from the
// summary: the names of the cgroups (the id label) and the machine. Zero
// values name cgroups as the cgroupfs driver and containerd do and serve
// no machine_* families.
type CadvisorConfig struct {
	// PodCgroup names a pod's cgroup, the id label of the pod's own series
	// (cgroups.Manager.PodCgroup fits). It may be called concurrently.
	// nil: the cgroupfs driver's name from the pod's status.qosClass,
	// "/kubepods/pod<uid>" (Guaranteed), "/kubepods/burstable/pod<uid>" or
	// "/kubepods/besteffort/pod<uid>"; "" (no id) without a QoS class.
	PodCgroup func(pod *v1.Pod) string
	// ContainerCgroup names a container's cgroup from its pod's cgroup and
	// the container's runtime ID (its status's containerID without the
	// "<runtime>://" prefix); RuntimeContainerCgroup knows containerd's and
	// CRI-O's. It may be called concurrently. nil: containerd's with the
	// cgroupfs driver, "<pod cgroup>/<id>".
	ContainerCgroup func(podCgroup, containerID string) string
	// SystemCgroups names the cgroups of the summary's system containers
	// ("kubelet", "runtime", "misc", "pods"): the id label of their series,
	// the cgroups the SummaryProvider reads them from. A system container
	// without one is not served. nil: {"pods": "/kubepods"}, the cgroupfs
	// driver's pod root.
	SystemCgroups map[string]string
	// Machine describes the machine for the machine_* families
	// (machine_cpu_cores, machine_memory_bytes, …; nodestatus'
	// MachineConfig.Machine and cadvisorinfo.Machine fit). It is called on
	// every scrape and should cache. nil: no machine_* family is served.
	Machine func() (*cadvisorapi.MachineInfo, error)
	// CgroupRoot is where the cgroups named above are mounted
	// ("/sys/fs/cgroup"; v1 controller directories or the unified
	// hierarchy). With it, each scrape reads the cgroup of every entry that
	// has an id for the families the summary has no figure for (page
	// cache, mapped files, CFS throttling, user and system CPU time, CPU
	// and memory limits) and each pod's network namespace for packet
	// counters. "": nothing is read, those families are not served.
	CgroupRoot string
	// ProcPath is where procfs is mounted, for the network namespaces of
	// pods (<ProcPath>/<pid>/net/dev). Used only with CgroupRoot. "":
	// "/proc".
	ProcPath string

	// mount is CgroupRoot and ProcPath, nil without CgroupRoot.
	mount *cgroupstat.Mount
}

// defaults fills the cgroup naming of the cgroupfs driver and containerd.
func (c *CadvisorConfig) defaults() {
	if c.PodCgroup == nil {
		c.PodCgroup = cgroupfsPodCgroup
	}
	if c.ContainerCgroup == nil {
		c.ContainerCgroup = func(pod, id string) string { return pod + "/" + id }
	}
	if c.SystemCgroups == nil {
		c.SystemCgroups = map[string]string{statsapi.SystemContainerPods: "/kubepods"}
	} else {
		c.SystemCgroups = maps.Clone(c.SystemCgroups)
	}
	if c.CgroupRoot != "" {
		c.mount = cgroupstat.NewMount(c.CgroupRoot, c.ProcPath)
	}
}

// RuntimeContainerCgroup returns the CadvisorConfig.ContainerCgroup of a
// CRI runtime (its RuntimeName, "containerd" or "cri-o") under a cgroup
// driver ("cgroupfs" or "systemd"): containerd names a container's cgroup
// "<pod cgroup>/<id>" under cgroupfs and "<pod cgroup>/cri-containerd-<id>.scope"
// under systemd, CRI-O "<pod cgroup>/crio-<id>" and
// "<pod cgroup>/crio-<id>.scope". nil (the default, containerd's under
// cgroupfs) for another runtime.
func RuntimeContainerCgroup(runtimeName, cgroupDriver string) func(podCgroup, containerID string) string {
	systemd := cgroupDriver == "systemd"
	switch {
	case runtimeName == "containerd" && systemd:
		return func(pod, id string) string { return pod + "/cri-containerd-" + id + ".scope" }
	case runtimeName == "cri-o" && systemd:
		return func(pod, id string) string { return pod + "/crio-" + id + ".scope" }
	case runtimeName == "cri-o":
		return func(pod, id string) string { return pod + "/crio-" + id }
	}
	return nil
}

// cgroupfsPodCgroup is the cgroupfs driver's name of a pod's cgroup.
func cgroupfsPodCgroup(pod *v1.Pod) string {
	uid := string(pod.UID)
	switch pod.Status.QOSClass {
	case v1.PodQOSGuaranteed:
		return "/kubepods/pod" + uid
	case v1.PodQOSBurstable:
		return "/kubepods/burstable/pod" + uid
	case v1.PodQOSBestEffort:
		return "/kubepods/besteffort/pod" + uid
	}
	return ""
}

// cadvisorMetrics answers /metrics/cadvisor: the summary in the families,
// help text, labels and sample timestamps of the kubelet's cadvisor
// collectors, read once per request in its context.
func (s *Server) cadvisorMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Summary == nil {
		http.Error(w, "stats are not supported by this node", http.StatusNotImplemented)
		return
	}
	g := &cadvisorGatherer{ctx: r.Context(), get: s.cfg.Summary.Get, pods: s.cfg.Pods, cfg: &s.cfg.Cadvisor, now: s.cfg.Clock.Now()}
	if m := s.cfg.Cadvisor.mount; m != nil {
		g.cgroups, g.noPSI = m.Reader(), !m.PSI()
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// The container families, in name order (the order of the exposition).
const (
	famCPUCFSPeriods = iota
	famCPUCFSThrottledPeriods
	famCPUCFSThrottledSeconds
	famCPUSystem
	famCPUUsage
	famCPUUser
	famFsInodesFree
	famFsInodes
	famFsLimit
	famFsUsage
	famHealthState
	famLastSeen
	famMemoryCache
	famMemoryFailures
	famMemoryMappedFile
	famMemoryRSS
	famMemorySwap
	famMemoryUsage
	famMemoryWorkingSet
	famRxBytes
	famRxErrors
	famRxDropped
	famRxPackets
	famTxBytes
	famTxErrors
	famTxDropped
	famTxPackets
	famPressureCPUStalled
	famPressureCPUWaiting
	famPressureIOStalled
	famPressureIOWaiting
	famPressureMemoryStalled
	famPressureMemoryWaiting
	famScrapeError
	famSpecCPUPeriod
	famSpecCPUQuota
	famSpecCPUShares
	famSpecMemoryLimit
	famStartTime
	numContainerFamilies
)

// metricFamily is a family's name, help and type, as cadvisor describes
// it (github.com/google/cadvisor metrics/prometheus.go), without a
// stability prefix: the kubelet registers cadvisor's collectors raw.
type metricFamily struct {
	name, help string
	typ        dto.MetricType
}

var (
	gauge   = dto.MetricType_GAUGE
	counter = dto.MetricType_COUNTER

	containerFamilies = [numContainerFamilies]metricFamily{
		famCPUCFSPeriods:          {"container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", counter},
		famCPUCFSThrottledPeriods: {"container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", counter},
		famCPUCFSThrottledSeconds: {"container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", counter},
		famCPUSystem:              {"container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", counter},
		famCPUUsage:               {"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", counter},
		famCPUUser:                {"container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", counter},
		famFsInodesFree:           {"container_fs_inodes_free", "Number of available Inodes", gauge},
		famFsInodes:               {"container_fs_inodes_total", "Number of Inodes", gauge},
		famFsLimit:                {"container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", gauge},
		famFsUsage:                {"container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", gauge},
		famHealthState:            {"container_health_state", "The result of the container's health check", gauge},
		famLastSeen:               {"container_last_seen", "Last time a container was seen by the exporter", gauge},
		famMemoryCache:            {"container_memory_cache", "Number of bytes of page cache memory.", gauge},
		famMemoryFailures:         {"container_memory_failures_total", "Cumulative count of memory allocation failures.", counter},
		famMemoryMappedFile:       {"container_memory_mapped_file", "Size of memory mapped files in bytes.", gauge},
		famMemoryRSS:              {"container_memory_rss", "Size of RSS in bytes.", gauge},
		famMemorySwap:             {"container_memory_swap", "Container swap usage in bytes.", gauge},
		famMemoryUsage:            {"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", gauge},
		famMemoryWorkingSet:       {"container_memory_working_set_bytes", "Current working set in bytes.", gauge},
		famRxBytes:                {"container_network_receive_bytes_total", "Cumulative count of bytes received", counter},
		famRxErrors:               {"container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", counter},
		famRxDropped:              {"container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", counter},
		famRxPackets:              {"container_network_receive_packets_total", "Cumulative count of packets received", counter},
		famTxBytes:                {"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", counter},
		famTxErrors:               {"container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", counter},
		famTxDropped:              {"container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", counter},
		famTxPackets:              {"container_network_transmit_packets_total", "Cumulative count of packets transmitted", counter},
		famPressureCPUStalled: {"container_pressure_cpu_stalled_seconds_total",
			"Total time duration no tasks in the container could make progress due to CPU congestion.", counter},
		famPressureCPUWaiting: {"container_pressure_cpu_waiting_seconds_total",
			"Total time duration tasks in the container have waited due to CPU congestion.", counter},
		famPressureIOStalled: {"container_pressure_io_stalled_seconds_total",
			"Total time duration no tasks in the container could make progress due to IO congestion.", counter},
		famPressureIOWaiting: {"container_pressure_io_waiting_seconds_total",
			"Total time duration tasks in the container have waited due to IO congestion.", counter},
		famPressureMemoryStalled: {"container_pressure_memory_stalled_seconds_total",
			"Total time duration no tasks in the container could make progress due to memory congestion.", counter},
		famPressureMemoryWaiting: {"container_pressure_memory_waiting_seconds_total",
			"Total time duration tasks in the container have waited due to memory congestion.", counter},
		famScrapeError:     {"container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", gauge},
		famSpecCPUPeriod:   {"container_spec_cpu_period", "CPU period of the container.", gauge},
		famSpecCPUQuota:    {"container_spec_cpu_quota", "CPU quota of the container.", gauge},
		famSpecCPUShares:   {"container_spec_cpu_shares", "CPU share of the container.", gauge},
		famSpecMemoryLimit: {"container_spec_memory_limit_bytes", "Memory limit for the container.", gauge},
		famStartTime:       {"container_start_time_seconds", "Start time of the container since unix epoch in seconds.", gauge},
	}

	// The base labels of the kubelet's container series
	// (containerPrometheusLabelsFunc in pkg/kubelet/server), in name order.
	cadvisorLabels = [numCadvisorLabels]string{"container", "id", "image", "name", "namespace", "pod"}

	// Label pairs with fixed values, shared by every series that has them
	// (nothing writes to a gathered family).
	labelCPUTotal   = staticLabel("cpu", "total")
	labelNoDevice   = staticLabel("device", "")
	labelPgfault    = staticLabel("failure_type", "pgfault")
	labelPgmajfault = staticLabel("failure_type", "pgmajfault")
	labelContainer  = staticLabel("scope", "container")
	labelHierarchy  = staticLabel("scope", "hierarchy")
	nameInterface   = "interface"
)

const numCadvisorLabels = 6

func staticLabel(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: &name, Value: &value}
}

// family wraps metrics as the family f.
func (f *metricFamily) family(metrics []*dto.Metric) *dto.MetricFamily {
	return &dto.MetricFamily{Name: &f.name, Help: &f.help, Type: &f.typ, Metric: metrics}
}

// gaugeSample and counterSample are one metric with its value and time,
// in one allocation.
type gaugeSample struct {
	m  dto.Metric
	g  dto.Gauge
	v  float64
	ts int64
}

type counterSample struct {
	m  dto.Metric
	c  dto.Counter
	v  float64
	ts int64
}

// newSample returns a metric of type typ with labels, value v and the time
// t (none if zero).
func newSample(typ dto.MetricType, labels []*dto.LabelPair, v float64, t time.Time) *dto.Metric {
	var (
		m  *dto.Metric
		ts *int64
	)
	if typ == dto.MetricType_COUNTER {
		s := &counterSample{v: v}
		s.c.Value, s.m.Counter = &s.v, &s.c
		m, ts = &s.m, &s.ts
	} else {
		s := &gaugeSample{v: v}
		s.g.Value, s.m.Gauge = &s.v, &s.g
		m, ts = &s.m, &s.ts
	}
	m.Label = labels
	if !t.IsZero() {
		*ts = t.UnixMilli()
		m.TimestampMs = ts
	}
	return m
}

// withLabels returns base and extra, both sorted by name, merged in name
// order, as the registry writes label pairs.
func withLabels(base []*dto.LabelPair, extra ...*dto.LabelPair) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(base)+len(extra))
	i := 0
	for _, b := range base {
		for i < len(extra) && extra[i].GetName() < b.GetName() {
			out = append(out, extra[i])
			i++
		}
		out = append(out, b)
	}
	return append(out, extra[i:]...)
}

// cadvisorGatherer gathers one summary's entries (the root cgroup, the
// system containers, each pod's cgroup and each container) as the
// kubelet's cadvisor collector does, and the machine's families. It builds
// the families directly, without a registry: const metrics and the
// registry's checks cost five times the allocations for the same text.
type cadvisorGatherer struct {
	ctx  context.Context
	get  func(context.Context) (*statsapi.Summary, error)
	pods PodLister
	cfg  *CadvisorConfig
	now  time.Time

	// cgroups reads the entries' cgroups (nil: Config.Cadvisor.CgroupRoot
	// is not set).
	cgroups *cgroupstat.Reader
	// noPSI: the host keeps no pressure information (read from the
	// cgroups), so no container_pressure_* family is served even where the
	// summary reports PSI (as zeros, the kubelet's on cgroup v1).
	noPSI bool

	fams   [numContainerFamilies][]*dto.Metric
	labels []*dto.LabelPair // the current entry's base labels
}

// Gather reads the summary once; a failed read gathers
// container_scrape_error 1 and no container series, as cadvisor.
func (g *cadvisorGatherer) Gather() ([]*dto.MetricFamily, error) {
	var machine []*dto.MetricFamily
	if g.cfg.Machine != nil {
		machine = gatherMachine(g.ctx, g.cfg.Machine)
	}
	scrapeError := 0.0
	if sum, err := g.get(g.ctx); err != nil {
		klog.FromContext(g.ctx).Error(err, "Error getting summary for the cadvisor metrics endpoint")
		scrapeError = 1
	} else {
		g.summary(sum)
	}
	g.fams[famScrapeError] = []*dto.Metric{newSample(gauge, nil, scrapeError, time.Time{})}
	out := make([]*dto.MetricFamily, 0, numContainerFamilies+len(machine))
	for i := range g.fams {
		if len(g.fams[i]) > 0 {
			out = append(out, containerFamilies[i].family(g.fams[i]))
		}
	}
	return append(out, machine...), nil
}

func (g *cadvisorGatherer) summary(sum *statsapi.Summary) {
	n := &sum.Node
	g.entry("", "/", "", "", "", "")
	g.start(n.StartTime)
	g.usage(n.CPU, n.Memory, n.IO, n.Swap)
	g.network(n.Network)
	g.namespaceNetwork("/", 1)
	g.fs(n.Fs)
	seen := map[string]bool{"/": true}
	for i := range n.SystemContainers {
		sc := &n.SystemContainers[i]
		id := g.cfg.SystemCgroups[sc.Name]
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		g.entry("", id, "", "", "", "")
		g.container(sc)
	}
	seenPods := make(map[[2]string]bool, len(sum.Pods))
	for i := range sum.Pods {
		p := &sum.Pods[i]
		if key := [2]string{p.PodRef.Namespace, p.PodRef.Name}; !seenPods[key] {
			seenPods[key] = true
			g.pod(p)
		}
	}
}

// pod gathers the pod's cgroup (CPU, memory, swap and the pod's network:
// the kubelet reports no network on pod cgroups but on the pod's sandbox
// container, with container="" under containerd) and its containers.
func (g *cadvisorGatherer) pod(p *statsapi.PodStats) {
	ns, name := p.PodRef.Namespace, p.PodRef.Name
	pod, ok := g.pods.GetPodByName(ns, name)
	if ok && p.PodRef.UID != "" && string(pod.UID) != p.PodRef.UID {
		ok = false // another pod of that name
	}
	podCgroup := ""
	if ok {
		podCgroup = g.cfg.PodCgroup(pod)
	}
	g.entry("", podCgroup, "", "", ns, name)
	g.start(p.StartTime)
	g.usage(p.CPU, p.Memory, p.IO, p.Swap)
	g.network(p.Network)
	g.namespaceNetwork(podCgroup, 0)
	for i := range p.Containers {
		ctr := &p.Containers[i]
		if slices.ContainsFunc(p.Containers[:i], func(c statsapi.ContainerStats) bool { return c.Name == ctr.Name }) {
			continue
		}
		var id, cgroup, image string
		if ok {
			id, image = containerIDAndImage(pod, ctr.Name)
			if id != "" && podCgroup != "" {
				cgroup = g.cfg.ContainerCgroup(podCgroup, id)
			}
		}
		g.entry(ctr.Name, cgroup, image, id, ns, name)
		g.container(ctr)
	}
}

// containerIDAndImage returns the runtime ID (without its "<runtime>://"
// prefix) and the image of the named container of pod, from its status;
// the image of its spec if the status has none yet.
func containerIDAndImage(pod *v1.Pod, name string) (id, image string) {
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses,
		pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		if i := slices.IndexFunc(statuses, func(st v1.ContainerStatus) bool { return st.Name == name }); i >= 0 {
			id, image = statuses[i].ContainerID, statuses[i].Image
			if _, after, found := strings.Cut(id, "://"); found {
				id = after
			}
			break
		}
	}
	if image == "" {
		image = specImage(&pod.Spec, name)
	}
	return id, image
}

// specImage is the image of the named container of spec.
func specImage(spec *v1.PodSpec, name string) string {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return spec.Containers[i].Image
		}
	}
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return spec.InitContainers[i].Image
		}
	}
	for i := range spec.EphemeralContainers {
		if spec.EphemeralContainers[i].Name == name {
			return spec.EphemeralContainers[i].Image
		}
	}
	return ""
}

// entryLabels are an entry's base label pairs in one allocation.
type entryLabels struct {
	values [numCadvisorLabels]string
	pairs  [numCadvisorLabels]dto.LabelPair
	ptrs   [numCadvisorLabels]*dto.LabelPair
}

// entry starts an entry (values in cadvisorLabels' order) and gathers its
// container_last_seen, which cadvisor reports for every container it
// knows, at the scrape's time.
func (g *cadvisorGatherer) entry(values ...string) {
	e := &entryLabels{}
	for i := range e.pairs {
		e.values[i] = values[i]
		e.pairs[i].Name, e.pairs[i].Value = &cadvisorLabels[i], &e.values[i]
		e.ptrs[i] = &e.pairs[i]
	}
	g.labels = e.ptrs[:]
	g.add(famLastSeen, g.labels, float64(g.now.Unix()), g.now)
	g.cgroup(e.values[1])
}

// add gathers one sample of family f.
func (g *cadvisorGatherer) add(f int, labels []*dto.LabelPair, v float64, t time.Time) {
	g.fams[f] = append(g.fams[f], newSample(containerFamilies[f].typ, labels, v, t))
}

// container gathers a container's or a system container's figures.
func (g *cadvisorGatherer) container(c *statsapi.ContainerStats) {
	g.start(c.StartTime)
	g.usage(c.CPU, c.Memory, c.IO, c.Swap)
	g.fs(c.Rootfs)
}

// usage gathers CPU, memory, swap and pressure, and the health state
// cadvisor reports with every container's stats: -1, no health check (it
// reads none from a CRI runtime).
func (g *cadvisorGatherer) usage(cpu *statsapi.CPUStats, mem *statsapi.MemoryStats, io *statsapi.IOStats, swap *statsapi.SwapStats) {
	switch {
	case cpu != nil:
		g.add(famHealthState, g.labels, -1, cpu.Time.Time)
	case mem != nil:
		g.add(famHealthState, g.labels, -1, mem.Time.Time)
	}
	g.cpu(cpu)
	g.memory(mem)
	g.swap(swap)
	if cpu != nil {
		g.pressure(famPressureCPUStalled, famPressureCPUWaiting, cpu.PSI, cpu.Time.Time)
	}
	if mem != nil {
		g.pressure(famPressureMemoryStalled, famPressureMemoryWaiting, mem.PSI, mem.Time.Time)
	}
	if io != nil {
		g.pressure(famPressureIOStalled, famPressureIOWaiting, io.PSI, io.Time.Time)
	}
}

// pressure gathers the PSI totals, in the kernel's microseconds in the
// summary as in cadvisor's stats (the API's comment says nanoseconds; the
// kubelet copies cadvisor's and the CRI's figures unchanged).
func (g *cadvisorGatherer) pressure(stalled, waiting int, psi *statsapi.PSIStats, t time.Time) {
	if psi == nil || g.noPSI {
		return
	}
	g.add(stalled, g.labels, float64(psi.Full.Total)/1e6, t)
	g.add(waiting, g.labels, float64(psi.Some.Total)/1e6, t)
}

// start gathers the creation time in whole seconds, without a sample
// time, as cadvisor (Spec.CreationTime).
func (g *cadvisorGatherer) start(t metav1.Time) {
	if s := t.Unix(); s > 0 {
		g.add(famStartTime, g.labels, float64(s), time.Time{})
	}
}

// cpu gathers the cumulative usage as cpu="total" (the kubelet does not
// collect per-CPU usage), only when positive, as cadvisor.
func (g *cadvisorGatherer) cpu(s *statsapi.CPUStats) {
	if s == nil || s.UsageCoreNanoSeconds == nil || *s.UsageCoreNanoSeconds == 0 {
		return
	}
	g.add(famCPUUsage, withLabels(g.labels, labelCPUTotal), float64(*s.UsageCoreNanoSeconds)/float64(time.Second), s.Time.Time)
}

func (g *cadvisorGatherer) memory(m *statsapi.MemoryStats) {
	if m == nil {
		return
	}
	ts := m.Time.Time
	for _, v := range []struct {
		f int
		v *uint64
	}{{famMemoryUsage, m.UsageBytes}, {famMemoryWorkingSet, m.WorkingSetBytes}, {famMemoryRSS, m.RSSBytes}} {
		if v.v != nil {
			g.add(v.f, g.labels, float64(*v.v), ts)
		}
	}
	// cadvisor reads pgfault and pgmajfault from memory.stat; on cgroup v2
	// the container and hierarchy scopes are the same figures.
	for _, f := range []struct {
		kind *dto.LabelPair
		v    *uint64
	}{{labelPgfault, m.PageFaults}, {labelPgmajfault, m.MajorPageFaults}} {
		if f.v != nil {
			g.add(famMemoryFailures, withLabels(g.labels, f.kind, labelContainer), float64(*f.v), ts)
			g.add(famMemoryFailures, withLabels(g.labels, f.kind, labelHierarchy), float64(*f.v), ts)
		}
	}
}

func (g *cadvisorGatherer) swap(s *statsapi.SwapStats) {
	if s != nil && s.SwapUsageBytes != nil {
		g.add(famMemorySwap, g.labels, float64(*s.SwapUsageBytes), s.Time.Time)
	}
}

// network gathers every interface (the default one if the list is empty).
func (g *cadvisorGatherer) network(n *statsapi.NetworkStats) {
	if n == nil {
		return
	}
	ifaces := n.Interfaces
	if len(ifaces) == 0 && n.Name != "" {
		ifaces = []statsapi.InterfaceStats{n.InterfaceStats}
	}
	ts := n.Time.Time
	for i := range ifaces {
		in := &ifaces[i]
		name := in.Name
		labels := withLabels(g.labels, &dto.LabelPair{Name: &nameInterface, Value: &name})
		for _, c := range []struct {
			f int
			v *uint64
		}{{famRxBytes, in.RxBytes}, {famRxErrors, in.RxErrors}, {famTxBytes, in.TxBytes}, {famTxErrors, in.TxErrors}} {
			if c.v != nil {
				g.add(c.f, labels, float64(*c.v), ts)
			}
		}
	}
}

// fs gathers one filesystem with an empty device label: the summary does
// not name devices.
func (g *cadvisorGatherer) fs(f *statsapi.FsStats) {
	if f == nil {
		return
	}
	labels := withLabels(g.labels, labelNoDevice)
	for _, v := range []struct {
		f int
		v *uint64
	}{{famFsInodesFree, f.InodesFree}, {famFsInodes, f.Inodes}, {famFsLimit, f.CapacityBytes}, {famFsUsage, f.UsedBytes}} {
		if v.v != nil {
			g.add(v.f, labels, float64(*v.v), f.Time.Time)
		}
	}
}

package kubeletapi

import (
	"context"
	"maps"
	"slices"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/klog/v2"
)

// The machine families of cadvisor's machine collector
// (metrics/prometheus_machine.go) that the kubelet serves, in name order:
// without CPUTopologyMetrics, which the kubelet does not include.
const (
	famCPUBooks = iota
	famCPUCores
	famCPUDrawers
	famCPUPhysicalCores
	famCPUSockets
	famDimmCapacity
	famDimmCount
	famMemoryBytes
	famNVMPowerBudget
	famNVMCapacity
	famMachineScrapeError
	famSwapBytes
	numMachineFamilies
)

var (
	machineFamilies = [numMachineFamilies]metricFamily{
		famCPUBooks:           {"machine_cpu_books", "Number of CPU books.", gauge},
		famCPUCores:           {"machine_cpu_cores", "Number of logical CPU cores.", gauge},
		famCPUDrawers:         {"machine_cpu_drawers", "Number of CPU drawers.", gauge},
		famCPUPhysicalCores:   {"machine_cpu_physical_cores", "Number of physical CPU cores.", gauge},
		famCPUSockets:         {"machine_cpu_sockets", "Number of CPU sockets.", gauge},
		famDimmCapacity:       {"machine_dimm_capacity_bytes", "Total RAM DIMM capacity (all types memory modules) value labeled by dimm type.", gauge},
		famDimmCount:          {"machine_dimm_count", "Number of RAM DIMM (all types memory modules) value labeled by dimm type.", gauge},
		famMemoryBytes:        {"machine_memory_bytes", "Amount of memory installed on the machine.", gauge},
		famNVMPowerBudget:     {"machine_nvm_avg_power_budget_watts", "NVM power budget.", gauge},
		famNVMCapacity:        {"machine_nvm_capacity", "NVM capacity value labeled by NVM mode (memory mode or app direct mode).", gauge},
		famMachineScrapeError: {"machine_scrape_error", "1 if there was an error while getting machine metrics, 0 otherwise.", gauge},
		famSwapBytes:          {"machine_swap_bytes", "Amount of swap memory available on the machine.", gauge},
	}

	labelMemoryMode    = staticLabel("mode", "memory_mode")
	labelAppDirectMode = staticLabel("mode", "app_direct_mode")
	nameType           = "type"
)

// gatherMachine gathers the machine's families and machine_scrape_error,
// as cadvisor's machine collector: a failed read gathers the error alone.
func gatherMachine(ctx context.Context, machine func() (*cadvisorapi.MachineInfo, error)) []*dto.MetricFamily {
	m, err := machine()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Error getting machine info for the cadvisor metrics endpoint")
		return []*dto.MetricFamily{machineFamilies[famMachineScrapeError].family(
			[]*dto.Metric{newSample(gauge, nil, 1, time.Time{})})}
	}
	var fams [numMachineFamilies][]*dto.Metric
	ids := []*dto.LabelPair{staticLabel("boot_id", m.BootID), staticLabel("machine_id", m.MachineID),
		staticLabel("system_uuid", m.SystemUUID)}
	// No sample time: the kubelet stamps these with the time its cached
	// machine info was read, at its start, which Prometheus refuses as out
	// of bounds once its head block has moved past it.
	add := func(f int, labels []*dto.LabelPair, v float64) {
		fams[f] = append(fams[f], newSample(gauge, labels, v, time.Time{}))
	}
	for f, v := range map[int]float64{
		famCPUBooks: float64(m.NumBooks), famCPUCores: float64(m.NumCores), famCPUDrawers: float64(m.NumDrawers),
		famCPUPhysicalCores: float64(m.NumPhysicalCores), famCPUSockets: float64(m.NumSockets),
		famMemoryBytes: float64(m.MemoryCapacity), famSwapBytes: float64(m.SwapCapacity),
		famNVMPowerBudget: float64(m.NVMInfo.AvgPowerBudget),
	} {
		add(f, ids, v)
	}
	for _, kind := range slices.Sorted(maps.Keys(m.MemoryByType)) {
		mem := m.MemoryByType[kind]
		labels := withLabels(ids, staticLabel(nameType, kind))
		add(famDimmCount, labels, float64(mem.DimmCount))
		add(famDimmCapacity, labels, float64(mem.Capacity))
	}
	add(famNVMCapacity, withLabels(ids, labelMemoryMode), float64(m.NVMInfo.MemoryModeCapacity))
	add(famNVMCapacity, withLabels(ids, labelAppDirectMode), float64(m.NVMInfo.AppDirectModeCapacity))
	fams[famMachineScrapeError] = []*dto.Metric{newSample(gauge, nil, 0, time.Time{})}
	out := make([]*dto.MetricFamily, 0, numMachineFamilies)
	for f := range fams {
		if len(fams[f]) > 0 {
			out = append(out, machineFamilies[f].family(fams[f]))
		}
	}
	return out
}

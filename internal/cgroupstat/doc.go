// Package cgroupstat reads the cgroup figures cadvisor serves on
// /metrics/cadvisor that the stats summary does not carry: page cache and
// mapped files, CFS throttling, user and system CPU time, the CPU and
// memory limits, and the packet counters of a pod's network namespace.
//
// A [Mount] is a cgroup mount ("/sys/fs/cgroup") and a proc mount; it
// finds out once, on first use, whether the mount is the unified (v2)
// hierarchy (cgroup.controllers at its root) or v1 controller directories
// (cpu, cpuacct and memory under it). A [Reader] reads one scrape's cgroups
// with one reusable buffer. Nothing here keeps state between reads: each
// figure is the kernel's at the time of the read. [ReadFile] reads a file
// with plain system calls, without the runtime poller's registration
// os.Open does; the stats package reads its cgroup and procfs files with
// it too (at 110 pods × 2 containers on cgroup v1 a /metrics/cadvisor
// scrape in BenchmarkCadvisorMetrics took 0.71× the time of os.Open).
//
// The figures follow cadvisor (github.com/google/cadvisor v0.56.2) and the
// cgroup library under it: on v1, hierarchical memory.stat totals
// ("total_cache", "total_mapped_file") where memory.use_hierarchy is 1,
// the cgroup's own otherwise; cpuacct.stat ticks at 100 per second; on v2
// "file" and "file_mapped", microseconds from cpu.stat; a quota of -1 or
// "max" is no quota, and a memory limit above 2^62 is no limit.
package cgroupstat

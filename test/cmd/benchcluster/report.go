package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	kubelet := fs.String("kubelet", "", "the kubelet's AgentResult JSON")
	agent := fs.String("agent", "", "the reference agent's AgentResult JSON")
	vnodes := fs.String("virtualnodes", "", "virtualnodes' VNodesResult JSON")
	kwok := fs.String("kwok", "", "KWOK's VNodesResult JSON")
	header := fs.String("header", "", "a line printed above the tables (date, machine, versions)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	w := os.Stdout
	if *header != "" {
		fmt.Fprintln(w, *header)
		fmt.Fprintln(w)
	}
	if *kubelet != "" && *agent != "" {
		var k, a AgentResult
		if err := readJSON(*kubelet, &k); err != nil {
			return err
		}
		if err := readJSON(*agent, &a); err != nil {
			return err
		}
		agentTable(w, k, a)
	}
	if *vnodes != "" && *kwok != "" {
		var v, k VNodesResult
		if err := readJSON(*vnodes, &v); err != nil {
			return err
		}
		if err := readJSON(*kwok, &k); err != nil {
			return err
		}
		vnodesTable(w, k, v)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// row prints one table row: the baseline, ours and ours / baseline.
func row(w io.Writer, name string, base, ours float64, unit string) {
	ratio := "—"
	if base != 0 {
		ratio = fmt.Sprintf("%.2f", ours/base)
	}
	fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, num(base, unit), num(ours, unit), ratio)
}

func num(v float64, unit string) string {
	switch {
	case v >= 100 || v == float64(int64(v)):
		return fmt.Sprintf("%.0f%s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f%s", v, unit)
	default:
		return fmt.Sprintf("%.3g%s", v, unit)
	}
}

const mib = 1 << 20

func agentTable(w io.Writer, k, a AgentResult) {
	fmt.Fprintf(w, "**Reference agent vs upstream kubelet** — %d pods (agnhost netexec; a configMap volume, the service-account token, an HTTP readiness and an exec liveness probe, period 10 s), %s of steady state, then %d deletions (grace 30 s)\n\n",
		k.Pods, fmtSeconds(k.SteadySeconds), k.Pods)
	fmt.Fprintf(w, "| figure | %s | %s | ratio |\n|---|---|---|---|\n", label(k.Agent, k.Version), label(a.Agent, a.Version))
	row(w, "create → Running p50", k.Running.P50, a.Running.P50, " ms")
	row(w, "create → Running p99", k.Running.P99, a.Running.P99, " ms")
	row(w, "create → Ready p50", k.Ready.P50, a.Ready.P50, " ms")
	row(w, "create → Ready p99", k.Ready.P99, a.Ready.P99, " ms")
	row(w, "delete → gone p50", k.Gone.P50, a.Gone.P50, " ms")
	row(w, "delete → gone p99", k.Gone.P99, a.Gone.P99, " ms")
	row(w, "RSS, steady (mean)", float64(k.Steady.RSSBytes)/mib, float64(a.Steady.RSSBytes)/mib, " MiB")
	row(w, "RSS, peak (VmHWM)", float64(k.PeakRSSBytes)/mib, float64(a.PeakRSSBytes)/mib, " MiB")
	row(w, "CPU, steady (mean)", k.Steady.CPUCores*1000, a.Steady.CPUCores*1000, " mcores")
	row(w, fmt.Sprintf("CPU, starting %d pods (mean)", k.Pods), k.Start.CPUCores*1000, a.Start.CPUCores*1000, " mcores")
	peak := func(r AgentResult) float64 {
		return max(r.Start.PeakCPUCores, r.Steady.PeakCPUCores, r.Delete.PeakCPUCores) * 1000
	}
	row(w, "CPU, peak (5 s window)", peak(k), peak(a), " mcores")
	n := float64(k.Pods)
	row(w, "API requests per pod start", float64(k.StartCounters.APIRequests)/n, float64(a.StartCounters.APIRequests)/n, "")
	row(w, "API bytes sent per pod start", float64(k.StartCounters.APIBytesSent)/n, float64(a.StartCounters.APIBytesSent)/n, " B")
	row(w, "API bytes received per pod start", float64(k.StartCounters.APIBytesReceived)/n, float64(a.StartCounters.APIBytesReceived)/n, " B")
	hour := func(r AgentResult, v int64) float64 { return float64(v) * 3600 / r.SteadySeconds }
	row(w, "API requests per node-hour (steady)", hour(k, k.SteadyCounters.APIRequests), hour(a, a.SteadyCounters.APIRequests), "")
	row(w, "API bytes sent per node-hour (steady)", hour(k, k.SteadyCounters.APIBytesSent)/mib, hour(a, a.SteadyCounters.APIBytesSent)/mib, " MiB")
	row(w, "API bytes received per node-hour (steady)", hour(k, k.SteadyCounters.APIBytesReceived)/mib, hour(a, a.SteadyCounters.APIBytesReceived)/mib, " MiB")
	minute := func(r AgentResult, v int64) float64 { return float64(v) * 60 / r.SteadySeconds }
	row(w, "CRI calls per minute (steady)", minute(k, k.SteadyCounters.CRICalls), minute(a, a.SteadyCounters.CRICalls), "")
	row(w, "CRI calls per pod start", float64(k.StartCounters.CRICalls)/n, float64(a.StartCounters.CRICalls)/n, "")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Where the steady state's calls go (per minute):")
	fmt.Fprintln(w)
	for _, r := range []AgentResult{k, a} {
		fmt.Fprintf(w, "- %s: API %s; CRI %s\n", r.Agent, top(r.SteadyCounters.APIByKind, 60/r.SteadySeconds, 6), top(r.SteadyCounters.CRIByMethod, 60/r.SteadySeconds, 6))
	}
	fmt.Fprintln(w)
}

func vnodesTable(w io.Writer, k, v VNodesResult) {
	fmt.Fprintf(w, "**virtualnodes vs KWOK** — %d nodes, %d pods (%d per node, bound by nodeName), %s of steady state, one kube-apiserver\n\n",
		k.Nodes, k.Pods, k.Pods/max(1, k.Nodes), fmtSeconds(k.SteadySeconds))
	fmt.Fprintf(w, "| figure | %s | %s | ratio |\n|---|---|---|---|\n", label(k.Agent, k.Version), label(v.Agent, v.Version))
	row(w, "start → every node Ready", k.NodesReady, v.NodesReady, " s")
	row(w, "first pod create → every pod Running", k.PodsRunning, v.PodsRunning, " s")
	row(w, "(pod creation alone took)", k.PodsCreated, v.PodsCreated, " s")
	row(w, "CPU, steady (mean)", k.Steady.CPUCores*1000, v.Steady.CPUCores*1000, " mcores")
	row(w, "CPU, ramp (start → every pod Running, mean)", k.Ramp.CPUCores*1000, v.Ramp.CPUCores*1000, " mcores")
	row(w, "RSS, steady (mean)", float64(k.Steady.RSSBytes)/mib, float64(v.Steady.RSSBytes)/mib, " MiB")
	row(w, "RSS, peak (VmHWM)", float64(k.PeakRSSBytes)/mib, float64(v.PeakRSSBytes)/mib, " MiB")
	row(w, "API requests per second (steady)", float64(k.SteadyAPI.APIRequests)/k.SteadySeconds, float64(v.SteadyAPI.APIRequests)/v.SteadySeconds, "")
	row(w, "API bytes sent per second (steady)", float64(k.SteadyAPI.APIBytesSent)/k.SteadySeconds/1024, float64(v.SteadyAPI.APIBytesSent)/v.SteadySeconds/1024, " KiB")
	row(w, "lease renewals (steady)", float64(k.Renewals), float64(v.Renewals), "")
	row(w, "late renewals (> ¼ duration after due)", float64(k.LateRenewals), float64(v.LateRenewals), "")
	row(w, "longest gap between renewals", k.WorstGap, v.WorstGap, " s")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Where the steady state's requests go (per second):")
	fmt.Fprintln(w)
	for _, r := range []VNodesResult{k, v} {
		fmt.Fprintf(w, "- %s: %s\n", r.Agent, top(r.SteadyAPI.APIByKind, 1/r.SteadySeconds, 6))
	}
	fmt.Fprintln(w)
}

func label(agent, version string) string {
	if version == "" {
		return agent
	}
	return agent + " " + version
}

func fmtSeconds(s float64) string {
	if s >= 60 && int(s)%60 == 0 {
		return fmt.Sprintf("%d min", int(s)/60)
	}
	return fmt.Sprintf("%.0f s", s)
}

// top lists the n largest counts of m, scaled.
func top(m map[string]int64, scale float64, n int) string {
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.v != b.v {
			return int(b.v - a.v)
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for i, e := range all {
		if i == n {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", e.k, num(float64(e.v)*scale, "")))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

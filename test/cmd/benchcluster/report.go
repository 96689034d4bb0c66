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
	kubelet := fs.String("kubelet", "", "the kubelet's AgentResult JSON files, comma-separated (one per run)")
	agent := fs.String("agent", "", "the reference agent's AgentResult JSON files, comma-separated, in the kubelet's runs' order")
	vnodes := fs.String("virtualnodes", "", "virtualnodes' VNodesResult JSON files, comma-separated")
	kwok := fs.String("kwok", "", "KWOK's VNodesResult JSON files, comma-separated, in virtualnodes' runs' order")
	ciV := fs.String("kwokci-virtualnodes", "", "virtualnodes' VNodesResult JSON files of KWOK's CI shape, comma-separated")
	ciK := fs.String("kwokci-kwok", "", "KWOK's VNodesResult JSON files of KWOK's CI shape, in the same runs' order")
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
		k, err := readAll[AgentResult](*kubelet)
		if err != nil {
			return err
		}
		a, err := readAll[AgentResult](*agent)
		if err != nil {
			return err
		}
		if len(k) != len(a) {
			return fmt.Errorf("%d kubelet runs but %d agent runs", len(k), len(a))
		}
		agentTable(w, k, a)
	}
	if *vnodes != "" && *kwok != "" {
		v, err := readAll[VNodesResult](*vnodes)
		if err != nil {
			return err
		}
		k, err := readAll[VNodesResult](*kwok)
		if err != nil {
			return err
		}
		if len(k) != len(v) {
			return fmt.Errorf("%d KWOK runs but %d virtualnodes runs", len(k), len(v))
		}
		vnodesTable(w, k, v)
	}
	if *ciV != "" && *ciK != "" {
		v, err := readAll[VNodesResult](*ciV)
		if err != nil {
			return err
		}
		k, err := readAll[VNodesResult](*ciK)
		if err != nil {
			return err
		}
		if len(k) != len(v) {
			return fmt.Errorf("%d KWOK runs but %d virtualnodes runs of KWOK's CI shape", len(k), len(v))
		}
		kwokCITable(w, k, v)
	}
	return nil
}

// readAll reads the comma-separated JSON files of paths.
func readAll[R any](paths string) ([]R, error) {
	var out []R
	for _, p := range strings.Split(paths, ",") {
		var r R
		if err := readJSON(p, &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// summary is one figure over interleaved runs: the median of each side,
// and the median and range of the per-run ratios (ours / base, runs
// paired in order; runs whose base is 0 have no ratio).
type summary struct {
	base, ours, ratio, lo, hi float64
	ratios                    int
}

func summarize(base, ours []float64) summary {
	s := summary{base: median(base), ours: median(ours)}
	var rs []float64
	for i := range min(len(base), len(ours)) {
		if base[i] != 0 {
			rs = append(rs, ours[i]/base[i])
		}
	}
	if len(rs) > 0 {
		s.ratio, s.lo, s.hi, s.ratios = median(rs), slices.Min(rs), slices.Max(rs), len(rs)
	}
	return s
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// figure is one row of a table: how to read it from a run's result.
type figure[R any] struct {
	name, unit string
	v          func(R) float64
}

// rows prints the figures: the baseline, ours and ours / baseline; over
// several runs, medians and the ratios' range.
func rows[R any](w io.Writer, figs []figure[R], base, ours []R) {
	for _, f := range figs {
		var b, o []float64
		for _, r := range base {
			b = append(b, f.v(r))
		}
		for _, r := range ours {
			o = append(o, f.v(r))
		}
		s := summarize(b, o)
		ratio := "—"
		switch {
		case s.ratios == 1:
			ratio = fmt.Sprintf("%.2f", s.ratio)
		case s.ratios > 1:
			ratio = fmt.Sprintf("%.2f (%.2f–%.2f)", s.ratio, s.lo, s.hi)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", f.name, num(s.base, f.unit), num(s.ours, f.unit), ratio)
	}
}

// tableHead is the header row; over several runs it says the cells are
// medians.
func tableHead(w io.Writer, n int, base, ours string) {
	if n > 1 {
		fmt.Fprintf(w, "Medians of %d interleaved runs; the ratio is the median of the per-run ratios, with their range.\n\n", n)
	}
	fmt.Fprintf(w, "| figure | %s | %s | ratio |\n|---|---|---|---|\n", base, ours)
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

func agentTable(w io.Writer, ks, as []AgentResult) {
	k, a := ks[0], as[0]
	shape := "created 10 at a time"
	if k.RatePerSecond > 0 {
		shape = fmt.Sprintf("created at %g per second", k.RatePerSecond)
	}
	fmt.Fprintf(w, "**Reference agent vs upstream kubelet** — %d pods (agnhost netexec; a configMap volume, the service-account token, an HTTP readiness and an exec liveness probe, period 10 s), %s, %s of steady state, then %d deletions (grace 30 s)\n\n",
		k.Pods, shape, fmtSeconds(k.SteadySeconds), k.Pods)
	tableHead(w, len(ks), label(k.Agent, k.Version), label(a.Agent, a.Version))
	n := float64(k.Pods)
	hour := func(r AgentResult, v int64) float64 { return float64(v) * 3600 / r.SteadySeconds }
	minute := func(r AgentResult, v int64) float64 { return float64(v) * 60 / r.SteadySeconds }
	rows(w, []figure[AgentResult]{
		{"create → Running p50", " ms", func(r AgentResult) float64 { return r.Running.P50 }},
		{"create → Running p99", " ms", func(r AgentResult) float64 { return r.Running.P99 }},
		{"create → Ready p50", " ms", func(r AgentResult) float64 { return r.Ready.P50 }},
		{"create → Ready p99", " ms", func(r AgentResult) float64 { return r.Ready.P99 }},
		{"pod start SLI p50 (the agent's own)", " ms", func(r AgentResult) float64 { return r.SLI.P50 }},
		{"pod start SLI p99 (the agent's own)", " ms", func(r AgentResult) float64 { return r.SLI.P99 }},
		{"delete → gone p50", " ms", func(r AgentResult) float64 { return r.Gone.P50 }},
		{"delete → gone p99", " ms", func(r AgentResult) float64 { return r.Gone.P99 }},
		{"RSS, steady (mean)", " MiB", func(r AgentResult) float64 { return float64(r.Steady.RSSBytes) / mib }},
		{"RSS, peak (VmHWM)", " MiB", func(r AgentResult) float64 { return float64(r.PeakRSSBytes) / mib }},
		{"CPU, steady (mean)", " mcores", func(r AgentResult) float64 { return r.Steady.CPUCores * 1000 }},
		{fmt.Sprintf("CPU, starting %d pods (mean)", k.Pods), " mcores", func(r AgentResult) float64 { return r.Start.CPUCores * 1000 }},
		// The work itself: a mean over each agent's own start phase favours
		// the agent whose pods take longer to become Ready.
		{fmt.Sprintf("CPU time, starting %d pods", k.Pods), " core-s", func(r AgentResult) float64 { return r.Start.CPUCores * r.StartPhase }},
		{"CPU, peak (5 s window)", " mcores", func(r AgentResult) float64 {
			return max(r.Start.PeakCPUCores, r.Steady.PeakCPUCores, r.Delete.PeakCPUCores) * 1000
		}},
		{"API requests per pod start", "", func(r AgentResult) float64 { return float64(r.StartCounters.APIRequests) / n }},
		{"API bytes sent per pod start", " B", func(r AgentResult) float64 { return float64(r.StartCounters.APIBytesSent) / n }},
		{"API bytes received per pod start", " B", func(r AgentResult) float64 { return float64(r.StartCounters.APIBytesReceived) / n }},
		{"API requests per node-hour (steady)", "", func(r AgentResult) float64 { return hour(r, r.SteadyCounters.APIRequests) }},
		{"API bytes sent per node-hour (steady)", " MiB", func(r AgentResult) float64 { return hour(r, r.SteadyCounters.APIBytesSent) / mib }},
		{"API bytes received per node-hour (steady)", " MiB", func(r AgentResult) float64 { return hour(r, r.SteadyCounters.APIBytesReceived) / mib }},
		{"CRI calls per minute (steady)", "", func(r AgentResult) float64 { return minute(r, r.SteadyCounters.CRICalls) }},
		{"CRI calls per pod start", "", func(r AgentResult) float64 { return float64(r.StartCounters.CRICalls) / n }},
	}, ks, as)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Where the start phase's runtime time goes (CRI milliseconds per pod start, as the proxy saw the calls; first run):")
	fmt.Fprintln(w)
	for _, r := range []AgentResult{k, a} {
		fmt.Fprintf(w, "- %s: %s\n", r.Agent, top(r.StartCounters.CRINanosByMethod, 1/(1e6*n), 8))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Where the steady state's calls go (per minute, first run):")
	fmt.Fprintln(w)
	for _, r := range []AgentResult{k, a} {
		fmt.Fprintf(w, "- %s: API %s; CRI %s\n", r.Agent, top(r.SteadyCounters.APIByKind, 60/r.SteadySeconds, 6), top(r.SteadyCounters.CRIByMethod, 60/r.SteadySeconds, 6))
	}
	fmt.Fprintln(w)
}

func vnodesTable(w io.Writer, ks, vs []VNodesResult) {
	k, v := ks[0], vs[0]
	fmt.Fprintf(w, "**virtualnodes vs KWOK** — %d nodes, %d pods (%d per node, bound by nodeName), %s of steady state, one kube-apiserver\n\n",
		k.Nodes, k.Pods, k.Pods/max(1, k.Nodes), fmtSeconds(k.SteadySeconds))
	tableHead(w, len(ks), label(k.Agent, k.Version), label(v.Agent, v.Version))
	rows(w, []figure[VNodesResult]{
		{"start → every node Ready", " s", func(r VNodesResult) float64 { return r.NodesReady }},
		{"first pod create → every pod Running", " s", func(r VNodesResult) float64 { return r.PodsRunning }},
		{"(pod creation alone took)", " s", func(r VNodesResult) float64 { return r.PodsCreated }},
		{"CPU, steady (mean)", " mcores", func(r VNodesResult) float64 { return r.Steady.CPUCores * 1000 }},
		{"CPU, ramp (start → every pod Running, mean)", " mcores", func(r VNodesResult) float64 { return r.Ramp.CPUCores * 1000 }},
		{"RSS, steady (mean)", " MiB", func(r VNodesResult) float64 { return float64(r.Steady.RSSBytes) / mib }},
		{"RSS, peak (VmHWM)", " MiB", func(r VNodesResult) float64 { return float64(r.PeakRSSBytes) / mib }},
		{"API requests per second (steady)", "", func(r VNodesResult) float64 { return float64(r.SteadyAPI.APIRequests) / r.SteadySeconds }},
		{"API bytes sent per second (steady)", " KiB", func(r VNodesResult) float64 { return float64(r.SteadyAPI.APIBytesSent) / r.SteadySeconds / 1024 }},
		{"lease renewals (steady)", "", func(r VNodesResult) float64 { return float64(r.Renewals) }},
		{"late renewals (> ¼ duration after due)", "", func(r VNodesResult) float64 { return float64(r.LateRenewals) }},
		{"longest gap between renewals", " s", func(r VNodesResult) float64 { return r.WorstGap }},
	}, ks, vs)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Where the steady state's requests go (per second, first run):")
	fmt.Fprintln(w)
	for _, r := range []VNodesResult{k, v} {
		fmt.Fprintf(w, "- %s: %s\n", r.Agent, top(r.SteadyAPI.APIByKind, 1/r.SteadySeconds, 6))
	}
	fmt.Fprintln(w)
}

// kwokCITable reports KWOK's own CI benchmark shape (its test/e2e
// CaseBenchmark: 5,000 nodes Ready within 60 s, 10,000 pods on one node
// Running within 60 s, deleted within 90 s) for both.
func kwokCITable(w io.Writer, ks, vs []VNodesResult) {
	k, v := ks[0], vs[0]
	fmt.Fprintf(w, "**KWOK's CI benchmark shape** — %d nodes, %d pods on one node (bound by nodeName), deleted with their 30 s grace period; KWOK's CI limits: nodes Ready ≤ 60 s, pods Running ≤ 60 s, pods gone ≤ 90 s\n\n",
		k.Nodes, k.Pods)
	tableHead(w, len(ks), label(k.Agent, k.Version), label(v.Agent, v.Version))
	rows(w, []figure[VNodesResult]{
		{"start → every node Ready", " s", func(r VNodesResult) float64 { return r.NodesReady }},
		{"first pod create → every pod Running", " s", func(r VNodesResult) float64 { return r.PodsRunning }},
		{"(pod creation alone took)", " s", func(r VNodesResult) float64 { return r.PodsCreated }},
		{"first delete → every pod gone", " s", func(r VNodesResult) float64 { return r.PodsDeleted }},
		{"(the delete requests alone took)", " s", func(r VNodesResult) float64 { return r.PodsDeleteRequested }},
		{"late renewals, whole run", "", func(r VNodesResult) float64 {
			return float64(r.RampLateRenewals + r.LateRenewals + r.DeleteLate)
		}},
		{"CPU, ramp (start → every pod Running, mean)", " mcores", func(r VNodesResult) float64 { return r.Ramp.CPUCores * 1000 }},
		{"RSS, peak (VmHWM)", " MiB", func(r VNodesResult) float64 { return float64(r.PeakRSSBytes) / mib }},
	}, ks, vs)
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

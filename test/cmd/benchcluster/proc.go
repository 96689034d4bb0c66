package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// procSample is one reading of a process.
type procSample struct {
	At  time.Time
	CPU time.Duration // user + system since the process started
	RSS int64         // bytes
}

// readProc reads a process's CPU time and resident set.
func readProc(pid int) (procSample, error) {
	s := procSample{At: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 22 {
		return s, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	s.CPU = time.Duration(utime+stime) * time.Second / clockTicks
	s.RSS, err = statusBytes(pid, "VmRSS")
	return s, err
}

// statusBytes reads a size field ("VmRSS", "VmHWM") of /proc/<pid>/status.
func statusBytes(pid int, field string) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// childOf returns the PID of the first child of parent whose command is not
// one of skip (the conformance scripts' supervisor runs the agent as its
// child and sleeps between restarts).
func childOf(parent int, skip ...string) (int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		stat, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		comm := string(stat[open+1 : end])
		f := strings.Fields(string(stat[end+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		if slices.Contains(skip, comm) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(string(stat))[0])
		return pid, nil
	}
	return 0, fmt.Errorf("no child of %d", parent)
}

// sampler reads a process every interval until stopped.
type sampler struct {
	pid int
	mu  sync.Mutex
	all []procSample
}

func (s *sampler) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if p, err := readProc(s.pid); err == nil {
			s.mu.Lock()
			s.all = append(s.all, p)
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// usage summarises the samples taken in [from, to]: mean CPU in cores, the
// highest CPU over any window of the given length, mean and peak RSS.
type usage struct {
	CPUCores     float64 `json:"cpuCores"`
	PeakCPUCores float64 `json:"peakCpuCores"`
	RSSBytes     int64   `json:"rssBytes"`
	PeakRSSBytes int64   `json:"peakRssBytes"`
}

func (s *sampler) usage(from, to time.Time, window time.Duration) usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var in []procSample
	for _, p := range s.all {
		if !p.At.Before(from) && !p.At.After(to) {
			in = append(in, p)
		}
	}
	var u usage
	if len(in) < 2 {
		return u
	}
	first, last := in[0], in[len(in)-1]
	u.CPUCores = (last.CPU - first.CPU).Seconds() / last.At.Sub(first.At).Seconds()
	var rssSum int64
	j := 0
	for i, p := range in {
		rssSum += p.RSS
		u.PeakRSSBytes = max(u.PeakRSSBytes, p.RSS)
		for j < i && p.At.Sub(in[j].At) > window {
			j++
		}
		if d := p.At.Sub(in[j].At); d >= window/2 && d > 0 {
			u.PeakCPUCores = max(u.PeakCPUCores, (p.CPU-in[j].CPU).Seconds()/d.Seconds())
		}
	}
	u.RSSBytes = rssSum / int64(len(in))
	return u
}

package crisim

import (
	"os"
	"path/filepath"
)

// TB is the part of testing.TB that Start uses (a *testing.T is one),
// named here so that programs embedding the simulator, such as the
// reference agent's demo, do not link package testing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Start serves a new Sim configured by cfg on a unix socket in a fresh
// temporary directory and returns it with its endpoint. The server is
// stopped and the directory removed when the test ends. The directory comes
// from os.MkdirTemp rather than t.TempDir, whose long paths can exceed the
// unix socket path limit.
func Start(t TB, cfg Config) (*Sim, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "crisim")
	if err != nil {
		t.Fatalf("crisim: %v", err)
	}
	sim := New(cfg)
	endpoint, stop, err := sim.ListenAndServe(filepath.Join(dir, "cri.sock"))
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("crisim: %v", err)
	}
	t.Cleanup(func() {
		stop()
		_ = os.RemoveAll(dir)
	})
	return sim, endpoint
}

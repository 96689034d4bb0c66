package apiserver

import (
	"fmt"
	"os"
	"sync"
)

// mainTB satisfies the small testing interface the upstream test server
// wants (ktesting.TB) outside of any *testing.T: the server lives for the
// whole test binary, started from TestMain. Log output goes to the ring;
// cleanups run when the server stops.
type mainTB struct {
	out *ring

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

func (t *mainTB) Attr(key, value string) {}
func (t *mainTB) Chdir(dir string)       { _ = os.Chdir(dir) }
func (t *mainTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}
func (t *mainTB) Error(args ...any) { t.Log(args...); t.Fail() }
func (t *mainTB) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.Fail()
}
func (t *mainTB) Fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}

// FailNow cannot stop a goroutine that is not a test; it panics so that a
// broken harness is loud rather than silently half-started.
func (t *mainTB) FailNow() { t.Fail(); panic("apiserver harness: fatal error, see log above") }
func (t *mainTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
func (t *mainTB) Fatal(args ...any) { t.Log(args...); t.FailNow() }
func (t *mainTB) Fatalf(format string, args ...any) {
	t.Logf(format, args...)
	t.FailNow()
}
func (t *mainTB) Helper()         {}
func (t *mainTB) Log(args ...any) { fmt.Fprintln(t.out, args...) }
func (t *mainTB) Logf(format string, args ...any) {
	fmt.Fprintf(t.out, format+"\n", args...)
}
func (t *mainTB) Name() string                  { return "nodekit-apiserver" }
func (t *mainTB) Setenv(key, value string)      { _ = os.Setenv(key, value) }
func (t *mainTB) Skip(args ...any)              { t.Log(args...) }
func (t *mainTB) Skipf(format string, a ...any) { t.Logf(format, a...) }
func (t *mainTB) SkipNow()                      {}
func (t *mainTB) Skipped() bool                 { return false }
func (t *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "nodekit-apiserver")
	if err != nil {
		t.Fatalf("tempdir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// runCleanups runs registered cleanups in reverse order, like testing.T.
func (t *mainTB) runCleanups() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

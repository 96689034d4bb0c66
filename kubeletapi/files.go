package kubeletapi

import (
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// fileCheckInterval is how often, at most, reloadingFiles looks at its
// files again.
const fileCheckInterval = time.Second

// reloadingFiles follows a set of files (the client CA bundle; a serving
// certificate and its key) without a goroutine: when the content is asked
// for, at most once per fileCheckInterval of the clock, the files are
// stat'ed, and read and handed to load when one changed (other file,
// modification time or size, so an atomic rename is seen too). A load that
// fails (a half-written pair, a bad PEM block) keeps the previous content
// and is tried again at the next check.
type reloadingFiles struct {
	names []string
	clock clock.PassiveClock
	load  func(contents [][]byte) error

	mu   sync.Mutex
	next time.Time
	seen []os.FileInfo
}

func newReloadingFiles(clk clock.PassiveClock, load func([][]byte) error, names ...string) (*reloadingFiles, error) {
	r := &reloadingFiles{names: names, clock: clk, load: load}
	r.next = clk.Now().Add(fileCheckInterval)
	infos, err := r.stat()
	if err == nil {
		err = r.read(infos)
	}
	return r, err
}

// check reloads the files if they changed since the last successful load
// and the last check is fileCheckInterval old. It returns the error of a
// check that failed (the previous content stays).
func (r *reloadingFiles) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if now.Before(r.next) {
		return nil
	}
	r.next = now.Add(fileCheckInterval)
	infos, err := r.stat()
	if err != nil {
		return err
	}
	if r.unchanged(infos) {
		return nil
	}
	return r.read(infos)
}

func (r *reloadingFiles) stat() ([]os.FileInfo, error) {
	infos := make([]os.FileInfo, len(r.names))
	for i, name := range r.names {
		fi, err := os.Stat(name)
		if err != nil {
			return nil, err
		}
		infos[i] = fi
	}
	return infos, nil
}

func (r *reloadingFiles) unchanged(infos []os.FileInfo) bool {
	if len(r.seen) != len(infos) {
		return false
	}
	for i, fi := range infos {
		old := r.seen[i]
		if !os.SameFile(old, fi) || !old.ModTime().Equal(fi.ModTime()) || old.Size() != fi.Size() {
			return false
		}
	}
	return true
}

// read loads the files; infos become the seen state only if load accepts
// their content.
func (r *reloadingFiles) read(infos []os.FileInfo) error {
	contents := make([][]byte, len(r.names))
	for i, name := range r.names {
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		contents[i] = b
	}
	if err := r.load(contents); err != nil {
		return fmt.Errorf("%s: %w", r.names[0], err)
	}
	r.seen = infos
	return nil
}

//go:build linux

package volumes

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// raceTries is how many subPaths each race test prepares while the volume
// is being changed under it. The attack this guards against escaped about
// once in 300 tries.
const raceTries = 3000

// swapRace is a volume whose directory "a" (holding "b") a container keeps
// exchanging with "l", a symlink to the directory outside, which holds its
// own "b": a subPath a/b/<name> resolved in one step and created in the
// next lands in outside/b if the swap falls in between.
type swapRace struct {
	vol, outside string
	realA        int // the directory first named "a", wherever it is now
	stop         chan struct{}
	done         chan struct{}
	swaps        int
	err          error
}

func startSwapRace(t *testing.T) *swapRace {
	t.Helper()
	base := t.TempDir()
	r := &swapRace{vol: filepath.Join(base, "vol"), outside: filepath.Join(base, "outside"),
		stop: make(chan struct{}), done: make(chan struct{})}
	require.NoError(t, os.MkdirAll(filepath.Join(r.vol, "a", "b"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(r.outside, "b"), 0o755))
	require.NoError(t, os.Symlink(r.outside, filepath.Join(r.vol, "l")))
	var err error
	r.realA, err = unix.Open(filepath.Join(r.vol, "a"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	volFD, err := unix.Open(r.vol, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	if err := unix.Renameat2(volFD, "a", volFD, "l", unix.RENAME_EXCHANGE); err != nil {
		closeFD(volFD)
		closeFD(r.realA)
		t.Skipf("renameat2(RENAME_EXCHANGE) on %s: %v", base, err)
	}
	go func() {
		defer close(r.done)
		defer closeFD(volFD)
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			if err := unix.Renameat2(volFD, "a", volFD, "l", unix.RENAME_EXCHANGE); err != nil {
				r.err = err
				return
			}
			r.swaps++
		}
	}()
	t.Cleanup(func() {
		r.halt()
		closeFD(r.realA)
	})
	return r
}

// halt stops the swapping; the counters may be read after it.
func (r *swapRace) halt() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// escaped reports whether anything was created outside the volume, and
// removes it so that the next try is counted on its own.
func (r *swapRace) escaped(t *testing.T) bool {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(r.outside, "b"))
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.RemoveAll(filepath.Join(r.outside, "b", e.Name())))
	}
	top, err := os.ReadDir(r.outside)
	require.NoError(t, err)
	require.Len(t, top, 1, "only b is outside")
	return len(entries) > 0
}

func TestMakeSubPathRaceNeverEscapes(t *testing.T) {
	r := startSwapRace(t)
	escapes, made := 0, 0
	for i := range raceTries {
		if makeSubPath(r.vol, filepath.Join("a", "b", "x"+strconv.Itoa(i))) == nil {
			made++
		}
		if r.escaped(t) {
			escapes++
		}
	}
	r.halt()
	require.NoError(t, r.err)
	t.Logf("%d tries, %d swaps, %d subPaths made, %d escapes", raceTries, r.swaps, made, escapes)
	assert.Zero(t, escapes, "directories created outside the volume")
	assert.NotZero(t, made, "some tries fall between swaps")
}

func TestSubPathMountRaceNeverEscapes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	r := startSwapRace(t)
	m, err := New(Config{RootDir: t.TempDir(), Mounter: HostMounter()})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-race"}}
	ctx := klog.NewContext(context.Background(), logr.Discard()) // thousands of expected failures
	escapes, bound, wrongSource := 0, 0, 0
	for i := range raceTries {
		name := "y" + strconv.Itoa(i)
		target, err := m.subPathMount(ctx, pod, "v", r.vol, filepath.Join("a", "b", name), "c", i)
		if err == nil {
			bound++
			if !boundTo(t, target, r.realA, filepath.Join("b", name)) {
				wrongSource++
			}
			require.NoError(t, HostMounter().Unmount(target))
		}
		if r.escaped(t) {
			escapes++
		}
	}
	r.halt()
	require.NoError(t, r.err)
	t.Logf("%d tries, %d swaps, %d bound, %d escapes, %d binds of another source", raceTries, r.swaps, bound, escapes, wrongSource)
	assert.Zero(t, escapes, "directories created outside the volume")
	assert.Zero(t, wrongSource, "binds of something other than the subPath inside the volume")
	assert.NotZero(t, bound, "some tries fall between swaps")
	points, err := mountPointsUnder(HostMounter(), m.PodDir(pod.UID))
	require.NoError(t, err)
	assert.Empty(t, points)
}

// boundTo reports whether target shows the file rel below the directory dirFD.
func boundTo(t *testing.T, target string, dirFD int, rel string) bool {
	t.Helper()
	var want, got unix.Stat_t
	if err := unix.Fstatat(dirFD, rel, &want, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Logf("%s: %v", rel, err)
		return false
	}
	require.NoError(t, unix.Stat(target, &got))
	return want.Dev == got.Dev && want.Ino == got.Ino
}

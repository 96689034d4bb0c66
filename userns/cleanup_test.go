package userns

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
)

// From upstream's TestCleanupOrphanedPodUsernsAllocations: desired and
// running pods together are keep.
func TestCleanupOrphans(t *testing.T) {
	cases := []struct {
		name       string
		desired    []types.UID // pods the agent knows
		running    []types.UID // pods the runtime runs
		dirs       []types.UID // pods with a directory
		before     []types.UID // pods with a range before cleanup
		wantKept   []types.UID
		wantFreed  []types.UID
		nilKeepFun bool
	}{
		{name: "no stale pods", dirs: []types.UID{"pod-1", "pod-2"}},
		{name: "no stale pods set", before: []types.UID{"pod-1", "pod-2"}, dirs: []types.UID{"pod-1", "pod-2"},
			wantFreed: []types.UID{"pod-1", "pod-2"}},
		{name: "one running pod", dirs: []types.UID{"pod-1", "pod-2"}, before: []types.UID{"pod-1", "pod-2"},
			running: []types.UID{"pod-1"}, wantKept: []types.UID{"pod-1"}, wantFreed: []types.UID{"pod-2"}},
		{name: "pod set before cleanup but not listed ==> unset", before: []types.UID{"pod-1", "pod-2"},
			running: []types.UID{"pod-1"}, wantFreed: []types.UID{"pod-1", "pod-2"}},
		{name: "one pod", dirs: []types.UID{"pod-1", "pod-2"}, before: []types.UID{"pod-1", "pod-2"},
			desired: []types.UID{"pod-1"}, wantKept: []types.UID{"pod-1"}, wantFreed: []types.UID{"pod-2"}},
		{name: "no listed pods ==> all unset", before: []types.UID{"pod-1", "pod-2"},
			wantFreed: []types.UID{"pod-1", "pod-2"}},
		{name: "nil keep keeps none", dirs: []types.UID{"pod-1"}, before: []types.UID{"pod-1"},
			wantFreed: []types.UID{"pod-1"}, nilKeepFun: true},
		{name: "desired and running", dirs: []types.UID{"pod-1", "pod-2", "pod-3"},
			before: []types.UID{"pod-1", "pod-2", "pod-3"}, desired: []types.UID{"pod-1"}, running: []types.UID{"pod-2"},
			wantKept: []types.UID{"pod-1", "pod-2"}, wantFreed: []types.UID{"pod-3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			m, root := newTestManager(t, nil)
			for _, uid := range tc.dirs {
				require.NoError(t, os.MkdirAll(filepath.Join(root, "pods", string(uid)), 0o750))
			}
			for i, uid := range tc.before {
				require.NoError(t, m.record(uid, IDRange{First: uint32(i+1) * 65536, Length: 65536}))
			}
			keep := map[types.UID]bool{}
			for _, uid := range append(append([]types.UID{}, tc.desired...), tc.running...) {
				keep[uid] = true
			}
			keepFn := func(uid types.UID) bool { return keep[uid] }
			if tc.nilKeepFun {
				keepFn = nil
			}
			require.NoError(t, m.CleanupOrphans(ctx, keepFn))
			for _, uid := range tc.wantKept {
				_, ok := m.Allocation(uid)
				require.True(t, ok, "pod %q should be allocated", uid)
			}
			for _, uid := range tc.wantFreed {
				_, ok := m.Allocation(uid)
				require.False(t, ok, "pod %q should not be allocated", uid)
			}
			require.Equal(t, len(tc.wantKept), m.slots.used)
		})
	}
}

// Cleanup removes the files of the pods it frees and reports the ones it
// cannot remove, cleaning the others.
func TestCleanupOrphansFiles(t *testing.T) {
	ctx := testCtx(t)
	m, root := newTestManager(t, nil)
	for _, uid := range []types.UID{"keep", "gone", "stuck"} {
		_, err := m.PodUserNamespace(ctx, userPod(uid), "", true)
		require.NoError(t, err)
	}
	stuck := mappingsPath(root, "stuck")
	require.NoError(t, os.Remove(stuck))
	require.NoError(t, os.MkdirAll(filepath.Join(stuck, "x"), 0o750))

	err := m.CleanupOrphans(ctx, func(uid types.UID) bool { return uid == "keep" })
	require.ErrorContains(t, err, `userns: release pod "stuck"`)
	require.FileExists(t, mappingsPath(root, "keep"))
	require.NoFileExists(t, mappingsPath(root, "gone"))
	_, ok := m.Allocation("gone")
	require.False(t, ok)
	_, ok = m.Allocation("stuck")
	require.True(t, ok, "a range whose file is still there stays taken")

	// The next pass, once the file can go.
	require.NoError(t, os.RemoveAll(stuck))
	require.NoError(t, m.CleanupOrphans(ctx, func(uid types.UID) bool { return uid == "keep" }))
	_, ok = m.Allocation("stuck")
	require.False(t, ok)

	// The pods directory itself gone: every range goes.
	require.NoError(t, os.RemoveAll(filepath.Join(root, "pods")))
	require.NoError(t, m.CleanupOrphans(ctx, func(types.UID) bool { return true }))
	require.Empty(t, m.usedBy)

	m2, err := New(Config{RootDir: root, Range: testRange, ListPodDirs: func() ([]types.UID, error) { return nil, os.ErrPermission }})
	require.Error(t, err, "New lists too")
	require.Nil(t, m2)
}

func TestCleanupOrphansListError(t *testing.T) {
	fail := false
	m, _ := newTestManager(t, func(c *Config) {
		dir := c.RootDir
		c.ListPodDirs = func() ([]types.UID, error) {
			if fail {
				return nil, os.ErrPermission
			}
			return listDirs(filepath.Join(dir, "pods"))
		}
	})
	fail = true
	err := m.CleanupOrphans(testCtx(t), nil)
	require.ErrorIs(t, err, os.ErrPermission)
	require.ErrorContains(t, err, "userns: read pods from disk")
}

// Many pods at once: every range distinct, each pod's answer stable, and
// releases and cleanups interleaved; run with -race.
func TestConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	m, _ := newTestManager(t, func(c *Config) { c.Range = IDRange{First: 65536, Length: 200 * 65536} })
	const pods, calls = 110, 3
	firsts := make([]uint32, pods)
	var mu sync.Mutex // guards firsts
	var wg sync.WaitGroup
	errs := make(chan error, pods*calls+1)
	for i := range pods {
		for range calls {
			wg.Go(func() {
				uid := types.UID(string(rune('A'+i/26)) + string(rune('a'+i%26)))
				ns, err := m.PodUserNamespace(ctx, userPod(uid), "", true)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if firsts[i] != 0 && firsts[i] != ns.Uids[0].HostId {
					errs <- fmt.Errorf("pod %s got ranges %d and %d", uid, firsts[i], ns.Uids[0].HostId)
				}
				firsts[i] = ns.Uids[0].HostId
			})
		}
	}
	wg.Go(func() {
		if err := m.CleanupOrphans(ctx, func(types.UID) bool { return true }); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[uint32]bool{}
	for _, f := range firsts {
		require.False(t, seen[f], "range %d handed out twice", f)
		seen[f] = true
	}
	require.Equal(t, pods, m.slots.used)

	for i := range pods {
		wg.Go(func() {
			uid := types.UID(string(rune('A'+i/26)) + string(rune('a'+i%26)))
			if err := m.Release(ctx, uid); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	require.Zero(t, m.slots.used)
	require.Empty(t, m.usedBy)
}

package userns

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// From upstream's TestMakeUserNsManager and the kubelet's configuration
// validation, plus the checks this package adds.
func TestNewValidation(t *testing.T) {
	cases := []struct {
		name    string
		cfg     func(c *Config)
		wantErr string // "" for success
	}{
		{name: "default", cfg: func(*Config) {}},
		{name: "default range, discovered without a kubelet user",
			cfg: func(c *Config) { c.Range = IDRange{}; c.SubIDs = noKubeletUser() }},
		{name: "firstID not multiple",
			cfg:     func(c *Config) { c.Range = IDRange{First: 65536 + 1, Length: testLen} },
			wantErr: "kubelet user assigned ID 65537 is not a multiple of 65536"},
		{name: "firstID is less than 65536",
			cfg:     func(c *Config) { c.Range = IDRange{First: 0, Length: testLen} },
			wantErr: "kubelet user assigned ID 0 must be greater or equal to 65536"},
		{name: "mappingLen not multiple",
			cfg:     func(c *Config) { c.Range = IDRange{First: 65536, Length: 65536 + 1} },
			wantErr: "kubelet user assigned IDs length 65537 is not a multiple of 65536"},
		{name: "range can't fit maxPods",
			cfg:     func(c *Config) { c.Range = IDRange{First: 65536, Length: 65536}; c.MaxPods = 2 },
			wantErr: "kubelet user assigned IDs are not enough to support 2 pods"},
		{name: "range can't fit default maxPods",
			cfg:     func(c *Config) { c.Range = IDRange{First: 65536, Length: 109 * 65536} },
			wantErr: "kubelet user assigned IDs are not enough to support 110 pods"},
		{name: "range fits maxPods exactly",
			cfg: func(c *Config) { c.Range = IDRange{First: 65536, Length: 65536}; c.MaxPods = 1 }},
		{name: "range ends past the last ID",
			cfg:     func(c *Config) { c.Range = IDRange{First: 1<<31 + 65536, Length: 1 << 31} },
			wantErr: "kubelet user assigned IDs 2147549184-4295032831 end past the last ID 4294967295"},
		{name: "range ends at the last ID",
			cfg: func(c *Config) { c.Range = IDRange{First: 1 << 31, Length: 1 << 31} }},
		{name: "idsPerPod not multiple",
			cfg:     func(c *Config) { c.IDsPerPod = 65536 + 1 },
			wantErr: "userNamespaces.idsPerPod must be a multiple of 65536"},
		{name: "idsPerPod too small",
			cfg:     func(c *Config) { c.IDsPerPod = 1024 },
			wantErr: "userNamespaces.idsPerPod must not be less than 65536"},
		{name: "custom idsPerPod, first not multiple",
			cfg:     func(c *Config) { c.IDsPerPod = 1 << 20 },
			wantErr: "kubelet user assigned ID 65536 is not a multiple of 1048576"},
		{name: "custom idsPerPod",
			cfg: func(c *Config) { c.IDsPerPod = 1 << 20; c.Range = IDRange{First: 1 << 20, Length: 2000 << 20} }},
		{name: "negative maxPods",
			cfg:     func(c *Config) { c.MaxPods = -1 },
			wantErr: "MaxPods -1 must not be negative"},
		{name: "no root dir",
			cfg:     func(c *Config) { c.RootDir = "" },
			wantErr: "RootDir is required"},
		{name: "relative root dir",
			cfg:     func(c *Config) { c.RootDir = "var/lib/kubelet" },
			wantErr: "must be absolute"},
		{name: "pod dir funcs instead of a root dir",
			cfg: func(c *Config) {
				dir := c.RootDir
				c.RootDir = ""
				c.PodDir = func(uid types.UID) string { return filepath.Join(dir, string(uid)) }
				c.ListPodDirs = func() ([]types.UID, error) { return nil, nil }
			}},
		{name: "discovery fails",
			cfg: func(c *Config) {
				c.Range = IDRange{}
				c.SubIDs = kubeletUser(t, "", "")
			},
			wantErr: "kubelet mappings: error retrieving additional uids"},
		{name: "discovered range invalid",
			cfg: func(c *Config) {
				c.Range = IDRange{}
				c.SubIDs = kubeletUser(t, "kubelet:100000:65536\n", "kubelet:100000:65536\n")
			},
			wantErr: "kubelet user assigned ID 100000 is not a multiple of 65536"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{RootDir: t.TempDir(), Range: testRange}
			tc.cfg(&cfg)
			m, err := New(cfg)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.NotNil(t, m)
				return
			}
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestNewDiscoveredDefaultRange(t *testing.T) {
	m, _ := newTestManager(t, func(c *Config) { c.Range = IDRange{}; c.SubIDs = noKubeletUser() })
	require.Equal(t, IDRange{First: 65536, Length: 1<<32 - 65536}, m.Range())
	require.Equal(t, uint32(65536), m.IDsPerPod())
	// The last slot maps the last 65536 IDs, never past them.
	m.slots.next = m.slots.n - 1
	ns, err := m.PodUserNamespace(testCtx(t), userPod("last"), "", true)
	require.NoError(t, err)
	require.Equal(t, uint32(1<<32-65536), ns.Uids[0].HostId)
}

// From upstream's TestMakeUserNsManagerFailsListPod.
func TestNewListPodDirs(t *testing.T) {
	_, err := New(Config{RootDir: "/r", Range: testRange,
		ListPodDirs: func() ([]types.UID, error) { return nil, os.ErrPermission }})
	require.ErrorContains(t, err, "read pods from disk")
	require.ErrorIs(t, err, os.ErrPermission)

	// No pods directory yet: no pods.
	m, err := New(Config{RootDir: filepath.Join(t.TempDir(), "missing"), Range: testRange})
	require.NoError(t, err)
	_, ok := m.Allocation("x")
	require.False(t, ok)
}

// From upstream's TestUserNsManagerAllocate.
func TestAllocateRecordRelease(t *testing.T) {
	cases := []struct {
		name      string
		idsPerPod uint32
		rng       IDRange
	}{
		{name: "default", idsPerPod: testIDs, rng: testRange},
		{name: "custom", idsPerPod: 1 << 20, rng: IDRange{First: 1 << 20, Length: 2000 << 20}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			m, _ := newTestManager(t, func(c *Config) { c.IDsPerPod = tc.idsPerPod; c.Range = tc.rng })
			isSet := func(first uint32) bool { return m.slots.has(m.slot(first)) }

			one, err := m.PodUserNamespace(ctx, userPod("one"), "", true)
			require.NoError(t, err)
			first1 := one.Uids[0].HostId
			require.Equal(t, tc.idsPerPod, one.Uids[0].Length)
			require.True(t, isSet(first1))

			two, err := m.PodUserNamespace(ctx, userPod("two"), "", true)
			require.NoError(t, err)
			first2 := two.Uids[0].HostId
			require.NotEqual(t, first1, first2)
			require.Equal(t, one.Uids[0].Length, two.Uids[0].Length)

			// Recording the same range again is fine; anything else fails.
			require.NoError(t, m.record("two", IDRange{First: first2, Length: tc.idsPerPod}))
			err = m.record("two", IDRange{First: first2 + 1, Length: tc.idsPerPod})
			require.ErrorIs(t, err, ErrInvalidMappings)
			err = m.record("two", IDRange{First: first2 + tc.idsPerPod, Length: tc.idsPerPod})
			require.EqualError(t, err, `different user namespace range already used by pod "two"`)

			require.NoError(t, m.Release(ctx, "one"))
			require.NoError(t, m.Release(ctx, "two"))
			require.False(t, isSet(first1))
			require.False(t, isSet(first2))

			// 1000 more, in memory: fsync is not what this checks.
			m.write = func(types.UID, IDRange) error { return nil }
			var allocs []uint32
			for i := range 1000 {
				ns, err := m.PodUserNamespace(ctx, userPod(types.UID(fmt.Sprint(i))), "", true)
				require.NoError(t, err)
				got := ns.Uids[0]
				require.Equal(t, tc.idsPerPod, got.Length)
				require.GreaterOrEqual(t, got.HostId, tc.rng.First)
				require.LessOrEqual(t, got.HostId, tc.rng.First+tc.rng.Length-tc.idsPerPod)
				allocs = append(allocs, got.HostId)
			}
			for i, v := range allocs {
				uid := types.UID(fmt.Sprint(i))
				require.True(t, isSet(v))
				require.NoError(t, m.Release(ctx, uid))
				require.False(t, isSet(v))
				require.NoError(t, m.record(uid, IDRange{First: v, Length: tc.idsPerPod}))
				require.True(t, isSet(v))
				require.NoError(t, m.Release(ctx, uid))
				require.False(t, isSet(v))
			}
			require.Empty(t, m.usedBy)
			require.Zero(t, m.slots.used)
		})
	}
}

// From upstream's TestRecordBounds, with the other record refusals.
func TestRecord(t *testing.T) {
	m, _ := newTestManager(t, func(c *Config) { c.Range = IDRange{First: 65536, Length: 65536}; c.MaxPods = 1 })
	cases := []struct {
		name    string
		uid     types.UID
		r       IDRange
		wantErr string
	}{
		{name: "first pod", uid: "0", r: IDRange{First: 65536, Length: 65536}},
		{name: "same again", uid: "0", r: IDRange{First: 65536, Length: 65536}},
		{name: "out of range", uid: "2", r: IDRange{First: 2 * 65536, Length: 65536}, wantErr: "id 131072 is out of range"},
		{name: "below range", uid: "2", r: IDRange{First: 0, Length: 65536}, wantErr: "id 0 is out of range"},
		{name: "taken", uid: "1", r: IDRange{First: 65536, Length: 65536}, wantErr: `range picked for pod "1" already taken`},
		{name: "wrong length", uid: "1", r: IDRange{First: 65536, Length: 0}, wantErr: "wrong user namespace length 0"},
		{name: "wrong offset", uid: "1", r: IDRange{First: 65537, Length: 65536}, wantErr: "wrong user namespace offset specified 65537"},
	}
	for _, tc := range cases {
		err := m.record(tc.uid, tc.r)
		if tc.wantErr == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.EqualError(t, err, tc.wantErr, tc.name)
		require.ErrorIs(t, err, ErrInvalidMappings, tc.name)
	}
}

func TestExhaustion(t *testing.T) {
	ctx := testCtx(t)
	m, root := newTestManager(t, func(c *Config) { c.Range = IDRange{First: 65536, Length: 2 * 65536}; c.MaxPods = 2 })
	for _, uid := range []types.UID{"a", "b"} {
		_, err := m.PodUserNamespace(ctx, userPod(uid), "", true)
		require.NoError(t, err)
	}
	_, err := m.PodUserNamespace(ctx, userPod("c"), "", true)
	require.EqualError(t, err, "create user namespace: could not find an empty slot to allocate a user namespace")
	require.ErrorIs(t, err, ErrExhausted)
	_, ok := m.Allocation("c")
	require.False(t, ok)
	require.NoFileExists(t, mappingsPath(root, "c"))

	// The pods that have one still get theirs.
	ns, err := m.PodUserNamespace(ctx, userPod("a"), "", true)
	require.NoError(t, err)
	require.Equal(t, uint32(65536), ns.Uids[0].HostId)

	require.NoError(t, m.Release(ctx, "a"))
	ns, err = m.PodUserNamespace(ctx, userPod("c"), "", true)
	require.NoError(t, err)
	require.Equal(t, uint32(65536), ns.Uids[0].HostId, "the freed range")
}

// A pod keeps its range across a restart, from the file on disk (from
// upstream's TestMakeUserNsManagerSwitch, the gate on both times).
func TestRestartKeepsRanges(t *testing.T) {
	ctx := testCtx(t)
	m, root := newTestManager(t, nil)
	want := map[types.UID]uint32{}
	for _, uid := range []types.UID{"pod-1", "pod-2", "pod-3"} {
		ns, err := m.PodUserNamespace(ctx, userPod(uid), "", true)
		require.NoError(t, err)
		want[uid] = ns.Uids[0].HostId
	}
	require.NoError(t, m.Release(ctx, "pod-2"))
	delete(want, "pod-2")
	// A pod directory without a mappings file (a pod with hostUsers true).
	require.NoError(t, os.MkdirAll(filepath.Join(root, "pods", "host-users"), 0o750))

	m2, err := New(Config{RootDir: root, Range: testRange})
	require.NoError(t, err)
	require.Len(t, m2.usedBy, len(want))
	for uid, first := range want {
		r, ok := m2.Allocation(uid)
		require.True(t, ok, uid)
		require.Equal(t, IDRange{First: first, Length: testIDs}, r)
		ns, err := m2.PodUserNamespace(ctx, userPod(uid), "", true)
		require.NoError(t, err)
		require.Equal(t, first, ns.Uids[0].HostId)
	}
	// A new pod gets none of theirs.
	ns, err := m2.PodUserNamespace(ctx, userPod("pod-4"), "", true)
	require.NoError(t, err)
	for _, first := range want {
		require.NotEqual(t, first, ns.Uids[0].HostId)
	}
}

// A node taken over from a kubelet: its files are read as they are, and
// ours are byte for byte what it writes.
func TestKubeletFileFormat(t *testing.T) {
	ctx := testCtx(t)
	root := t.TempDir()
	kubelets := `{"uidMappings":[{"hostId":1966080,"containerId":0,"length":65536}],"gidMappings":[{"hostId":1966080,"containerId":0,"length":65536}]}`
	writeFile(t, root, "from-kubelet", kubelets)
	m, err := New(Config{RootDir: root, Range: testRange})
	require.NoError(t, err)

	ns, err := m.PodUserNamespace(ctx, userPod("from-kubelet"), "", true)
	require.NoError(t, err)
	require.Equal(t, uint32(1966080), ns.Uids[0].HostId)

	_, err = m.PodUserNamespace(ctx, userPod("new"), "", true)
	require.NoError(t, err)
	b, err := os.ReadFile(mappingsPath(root, "new"))
	require.NoError(t, err)
	require.Equal(t, `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`, string(b))
	st, err := os.Stat(mappingsPath(root, "new"))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
	entries, err := os.ReadDir(filepath.Join(root, "pods", "new"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")
}

// Files New cannot use fail it, as they fail the kubelet's start.
func TestNewInvalidFiles(t *testing.T) {
	valid := func(first uint32) string {
		return fmt.Sprintf(`{"uidMappings":[{"hostId":%d,"containerId":0,"length":65536}],"gidMappings":[{"hostId":%d,"containerId":0,"length":65536}]}`, first, first)
	}
	cases := []struct {
		name    string
		files   map[types.UID]string
		wantErr string // "" for success
	}{
		{name: "valid", files: map[types.UID]string{"a": valid(131072)}},
		{name: "empty file is no mapping", files: map[types.UID]string{"a": ""}},
		{name: "wrong length", wantErr: "wrong user namespace length 131072",
			files: map[types.UID]string{"a": `{"uidMappings":[{"hostId":131072,"containerId":0,"length":131072}],"gidMappings":[{"hostId":131072,"containerId":0,"length":131072}]}`}},
		{name: "outside the range", files: map[types.UID]string{"a": valid(2001 * 65536)}, wantErr: "id 131137536 is out of range"},
		{name: "not JSON", files: map[types.UID]string{"a": "{"}, wantErr: "invalid user namespace mappings file"},
		{name: "one range, two pods", files: map[types.UID]string{"a": valid(131072), "b": valid(131072)},
			wantErr: "already taken"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for uid, content := range tc.files {
				writeFile(t, root, uid, content)
			}
			m, err := New(Config{RootDir: root, Range: testRange})
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.NotNil(t, m)
				return
			}
			require.ErrorIs(t, err, ErrInvalidMappings)
			require.ErrorContains(t, err, "record pod mappings for existing pod")
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// A file changed under a running pod is refused on its next use.
func TestPodUserNamespaceInvalidFile(t *testing.T) {
	ctx := testCtx(t)
	m, root := newTestManager(t, nil)
	_, err := m.PodUserNamespace(ctx, userPod("a"), "", true)
	require.NoError(t, err)
	writeFile(t, root, "a", `{"uidMappings":[{"hostId":655360,"containerId":0,"length":65536}],"gidMappings":[{"hostId":655360,"containerId":0,"length":65536}]}`)
	_, err = m.PodUserNamespace(ctx, userPod("a"), "", true)
	require.EqualError(t, err, `user namespace: different user namespace range already used by pod "a"`)

	writeFile(t, root, "b", `{"uidMappings":[],"gidMappings":[]}`)
	_, err = m.PodUserNamespace(ctx, userPod("b"), "", true)
	require.EqualError(t, err, "user namespace: invalid user namespace configuration: no more than one mapping allowed.")
	require.ErrorIs(t, err, ErrInvalidMappings)
}

// A file that went missing under a pod holding a range is written again
// with that range.
func TestMissingFileRewritten(t *testing.T) {
	ctx := testCtx(t)
	m, root := newTestManager(t, nil)
	ns, err := m.PodUserNamespace(ctx, userPod("a"), "", true)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "pods", "a")))

	again, err := m.PodUserNamespace(ctx, userPod("a"), "", true)
	require.NoError(t, err)
	require.Equal(t, ns.Uids[0].HostId, again.Uids[0].HostId)
	require.FileExists(t, mappingsPath(root, "a"))
	require.Equal(t, 1, m.slots.used)
}

// A failed write frees the range it took, and removes the file if the
// failure came after it was in place.
func TestWriteFailureReleases(t *testing.T) {
	cases := []struct {
		name      string
		fileStays bool // the write renamed the file in, then failed
	}{
		{name: "nothing written"},
		{name: "directory sync failed", fileStays: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			m, root := newTestManager(t, nil)
			m.write = func(uid types.UID, r IDRange) error {
				if tc.fileStays {
					require.NoError(t, m.writeMappings(uid, r))
				}
				return errors.New("disk trouble")
			}
			_, err := m.PodUserNamespace(ctx, userPod("a"), "", true)
			require.EqualError(t, err, "create user namespace: disk trouble")
			_, ok := m.Allocation("a")
			require.False(t, ok)
			require.Zero(t, m.slots.used)
			require.NoFileExists(t, mappingsPath(root, "a"))
		})
	}

	// The real write, where the pod directory cannot be made.
	root := t.TempDir()
	blocker := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	m, err := New(Config{Range: testRange,
		PodDir:      func(uid types.UID) string { return filepath.Join(blocker, string(uid)) },
		ListPodDirs: func() ([]types.UID, error) { return nil, nil }})
	require.NoError(t, err)
	require.ErrorContains(t, m.writeMappings("a", IDRange{First: 65536, Length: 65536}), "not a directory")
}

func TestRelease(t *testing.T) {
	ctx := testCtx(t)
	m, root := newTestManager(t, nil)
	require.NoError(t, m.Release(ctx, "unknown"), "a pod without a range")

	_, err := m.PodUserNamespace(ctx, userPod("a"), "", true)
	require.NoError(t, err)
	require.FileExists(t, mappingsPath(root, "a"))

	// The file cannot be removed: the range stays the pod's.
	path := mappingsPath(root, "a")
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.MkdirAll(filepath.Join(path, "x"), 0o750))
	err = m.Release(ctx, "a")
	require.ErrorContains(t, err, `userns: release pod "a"`)
	_, ok := m.Allocation("a")
	require.True(t, ok)

	require.NoError(t, os.RemoveAll(path))
	require.NoError(t, m.Release(ctx, "a"))
	_, ok = m.Allocation("a")
	require.False(t, ok)
	require.NoFileExists(t, path)
	require.DirExists(t, filepath.Join(root, "pods", "a"), "the pod directory is the host's")
	require.NoError(t, m.Release(ctx, "a"), "twice")
}

func TestUIDs(t *testing.T) {
	ctx := testCtx(t)
	m, _ := newTestManager(t, nil)
	for _, uid := range []types.UID{"", ".", "..", "a/b", `a\b`} {
		_, err := m.PodUserNamespace(ctx, userPod(uid), "", true)
		require.ErrorIs(t, err, ErrInvalidUID, "%q", uid)
	}
	require.Empty(t, m.usedBy)
}

func TestErrorsIs(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", unsupported("kata"))
	require.ErrorIs(t, err, ErrRuntimeUnsupported)
	require.False(t, errors.Is(err, ErrExhausted))
	assert.Equal(t, "wrapped: can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces", err.Error())
}

// From upstream's TestUserNsManagerParseUserNsFile: a file is parsed and
// recorded (parseUserNsFileAndRecord), with the messages users see.
func TestParseAndRecord(t *testing.T) {
	m, _ := newTestManager(t, nil)
	cases := []struct {
		name    string
		file    string
		wantErr string // "" for success
	}{
		{name: "basic", file: `{
			"uidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ],
			"gidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ]}`},
		{name: "invalid length", file: `{
			"uidMappings":[ { "hostId":131072, "containerId":0, "length":0 } ],
			"gidMappings":[ { "hostId":131072, "containerId":0, "length":0 } ]}`,
			wantErr: "wrong user namespace length 0"},
		{name: "wrong offset", file: `{
			"uidMappings":[ {"hostId":131072, "containerId":0, "length":65536 } ],
			"gidMappings":[ {"hostId":1, "containerId":0, "length":65536 } ]}`,
			wantErr: "invalid user namespace configuration: GID and UID mapping should be identical"},
		{name: "two GID mappings (upstream's row, not JSON)", file: `{
			"uidMappings":[ { "hostId":131072, "containerId":0, "length":userNsLength } ],
			"gidMappings":[ { "hostId":131072, "containerId":0, "length":userNsLength }, { "hostId":196608, "containerId":0, "length":65536 } ]}`,
			wantErr: "invalid user namespace mappings file: invalid character 'u'"},
		{name: "two GID mappings", file: `{
			"uidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ],
			"gidMappings":[ { "hostId":131072, "containerId":0, "length":65536 }, { "hostId":196608, "containerId":0, "length":65536 } ]}`,
			wantErr: "invalid user namespace configuration: GID and UID mappings should be identical."},
		{name: "two UID mappings", file: `{
			"uidMappings":[ { "hostId":131072, "containerId":0, "length":65536 }, { "hostId":196608, "containerId":0, "length":65536 } ],
			"gidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ]}`,
			wantErr: "invalid user namespace configuration: no more than one mapping allowed."},
		{name: "no UID mappings", file: `{"gidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ]}`,
			wantErr: "invalid user namespace configuration: no more than one mapping allowed."},
		{name: "no root UID", file: `{
			"uidMappings":[ { "hostId":131072, "containerId":1, "length":65536 } ],
			"gidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ]}`,
			wantErr: "invalid user namespace configuration: GID and UID mapping should be identical"},
		{name: "no root UID nor GID", file: `{
			"uidMappings":[ { "hostId":131072, "containerId":1, "length":65536 } ],
			"gidMappings":[ { "hostId":131072, "containerId":1, "length":65536 } ]}`,
			wantErr: "invalid user namespace configuration: UID 0 must be mapped"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseMappings([]byte(tc.file))
			if err == nil {
				err = m.record(types.UID(tc.name), r)
			}
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorIs(t, err, ErrInvalidMappings)
		})
	}
}

package userns

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// noKubeletUser is a node without a "kubelet" user.
func noKubeletUser() SubIDs {
	return SubIDs{
		LookupUser: func(name string) (*user.User, error) { return nil, user.UnknownUserError(name) },
		SubUIDFile: "/nonexistent/subuid", SubGIDFile: "/nonexistent/subgid",
	}
}

// kubeletUser is a node with a "kubelet" user (UID 990, group GID 991)
// and those subuid and subgid files ("" for a missing file).
func kubeletUser(t *testing.T, subuid, subgid string) SubIDs {
	t.Helper()
	dir := t.TempDir()
	src := SubIDs{
		SubUIDFile: filepath.Join(dir, "subuid"),
		SubGIDFile: filepath.Join(dir, "subgid"),
		LookupUser: func(name string) (*user.User, error) {
			if name != KubeletUser {
				return nil, user.UnknownUserError(name)
			}
			return &user.User{Username: name, Uid: "990", Gid: "991"}, nil
		},
		LookupGroup: func(name string) (*user.Group, error) {
			if name != KubeletUser {
				return nil, user.UnknownGroupError(name)
			}
			return &user.Group{Name: name, Gid: "991"}, nil
		},
	}
	if subuid != "" {
		require.NoError(t, os.WriteFile(src.SubUIDFile, []byte(subuid), 0o600))
	}
	if subgid != "" {
		require.NoError(t, os.WriteFile(src.SubGIDFile, []byte(subgid), 0o600))
	}
	return src
}

// The kubelet's getKubeletMappings, and its TestParseGetSubIdsOutput rows
// as lines of the files getsubids reads.
func TestKubeletMappings(t *testing.T) {
	const same = "root:100000:65536\nkubelet:65536:2147483648\n"
	cases := []struct {
		name      string
		src       func(t *testing.T) SubIDs
		idsPerPod uint32
		want      IDRange
		wantErr   string
	}{
		{name: "no kubelet user: default", src: func(*testing.T) SubIDs { return noKubeletUser() },
			want: IDRange{First: 65536, Length: 1<<32 - 65536}},
		{name: "no kubelet user, custom idsPerPod", idsPerPod: 1 << 20,
			src:  func(*testing.T) SubIDs { return noKubeletUser() },
			want: IDRange{First: 1 << 20, Length: 1<<32 - 1<<20}},
		{name: "valid", src: func(t *testing.T) SubIDs { return kubeletUser(t, same, same) },
			want: IDRange{First: 65536, Length: 2147483648}},
		{name: "by numeric UID and GID",
			src: func(t *testing.T) SubIDs {
				return kubeletUser(t, "# comment\n\n990:131072:65536\n", "991:131072:65536\n")
			},
			want: IDRange{First: 131072, Length: 65536}},
		{name: "other owners' lines are not parsed",
			src: func(t *testing.T) SubIDs {
				return kubeletUser(t, "bob:x\nkubelet:131072:65536\n", "kubelet:131072:65536\n")
			},
			want: IDRange{First: 131072, Length: 65536}},
		{name: "multiple lines",
			src: func(t *testing.T) SubIDs {
				return kubeletUser(t, "kubelet:1:2\nkubelet:3:4\n", "kubelet:1:2\n")
			},
			wantErr: `2 ranges for "kubelet": it must have only one`},
		{name: "name and UID both", src: func(t *testing.T) SubIDs {
			return kubeletUser(t, "kubelet:1:2\n990:3:4\n", "kubelet:1:2\n")
		}, wantErr: "it must have only one"},
		{name: "wrong format", src: func(t *testing.T) SubIDs { return kubeletUser(t, "kubelet:65536\n", same) },
			wantErr: `invalid line "kubelet:65536"`},
		{name: "non numeric 1", src: func(t *testing.T) SubIDs { return kubeletUser(t, "kubelet:Foo:65536\n", same) },
			wantErr: "error parsing line"},
		{name: "non numeric 2", src: func(t *testing.T) SubIDs { return kubeletUser(t, "kubelet:0:Bar\n", same) },
			wantErr: "error parsing line"},
		{name: "overflow 1", src: func(t *testing.T) SubIDs { return kubeletUser(t, "kubelet:4294967296:2147483648\n", same) },
			wantErr: "value out of range"},
		{name: "overflow 2", src: func(t *testing.T) SubIDs { return kubeletUser(t, "kubelet:65536:4294967296\n", same) },
			wantErr: "value out of range"},
		{name: "negative value 1", src: func(t *testing.T) SubIDs { return kubeletUser(t, "kubelet:-1:2147483648\n", same) },
			wantErr: "error parsing line"},
		{name: "negative value 2", src: func(t *testing.T) SubIDs { return kubeletUser(t, "kubelet:65536:-1\n", same) },
			wantErr: "error parsing line"},
		{name: "no subuid entry", src: func(t *testing.T) SubIDs { return kubeletUser(t, "root:1:2\n", same) },
			wantErr: `error retrieving additional uids for user "kubelet": `},
		{name: "no subgid entry", src: func(t *testing.T) SubIDs { return kubeletUser(t, same, "root:1:2\n") },
			wantErr: `error retrieving additional gids for user "kubelet": `},
		{name: "no subuid file", src: func(t *testing.T) SubIDs { return kubeletUser(t, "", same) },
			wantErr: "no such file or directory"},
		{name: "mismatched", src: func(t *testing.T) SubIDs { return kubeletUser(t, same, "kubelet:131072:2147483648\n") },
			wantErr: `mismatched subuids and subgids for user "kubelet"`},
		{name: "user lookup fails", src: func(*testing.T) SubIDs {
			return SubIDs{LookupUser: func(string) (*user.User, error) { return nil, errors.New("nss down") }}
		}, wantErr: `look up user "kubelet": nss down`},
		{name: "group lookup fails", src: func(t *testing.T) SubIDs {
			s := kubeletUser(t, same, same)
			s.LookupGroup = func(string) (*user.Group, error) { return nil, errors.New("nss down") }
			return s
		}, wantErr: `look up group "kubelet": nss down`},
		{name: "no group: names only", src: func(t *testing.T) SubIDs {
			s := kubeletUser(t, same, "991:1:2\n"+same)
			s.LookupGroup = func(name string) (*user.Group, error) { return nil, user.UnknownGroupError(name) }
			return s
		}, want: IDRange{First: 65536, Length: 2147483648}},
		{name: "another user", src: func(t *testing.T) SubIDs {
			s := kubeletUser(t, same, same)
			s.User = "nodeagent"
			return s
		}, want: IDRange{First: 65536, Length: 1<<32 - 65536}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KubeletMappings(testCtx(t), tc.idsPerPod, tc.src(t))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestNewDiscoversRange(t *testing.T) {
	line := "kubelet:" + "65536" + ":" + "655360000\n"
	m, _ := newTestManager(t, func(c *Config) { c.Range = IDRange{}; c.SubIDs = kubeletUser(t, line, line) })
	require.Equal(t, IDRange{First: 65536, Length: 655360000}, m.Range())
}

func TestDefaultRange(t *testing.T) {
	require.Equal(t, IDRange{First: 65536, Length: 4294901760}, DefaultRange(0))
	require.Equal(t, IDRange{First: 65535 * 65536, Length: 65536}, DefaultRange(65535*65536))
}

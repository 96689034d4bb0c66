package csi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSocketPath(t *testing.T) {
	for _, tc := range []struct {
		endpoint, want string // want "" for refused
	}{
		{endpoint: "/run/csi/csi.sock", want: "/run/csi/csi.sock"},
		{endpoint: "unix:///run/csi/csi.sock", want: "/run/csi/csi.sock"},
		{endpoint: "unix:/run/csi/csi.sock", want: "/run/csi/csi.sock"},
		{endpoint: "/run/csi/../csi/./csi.sock", want: "/run/csi/csi.sock"},
		{endpoint: "dns:///csi.example.com:443"},
		{endpoint: "dns:csi.example.com:443"},
		{endpoint: "csi.example.com:443"},
		{endpoint: "127.0.0.1:10000"},
		{endpoint: "passthrough:///127.0.0.1:10000"},
		{endpoint: "ipv4:127.0.0.1:10000"},
		{endpoint: "tcp://127.0.0.1:10000"},
		{endpoint: "unix://run/csi.sock"}, // authority "run", not a path
		{endpoint: "unix:csi.sock"},
		{endpoint: "unix-abstract:csi"},
		{endpoint: "UNIX:///run/csi.sock"},
		{endpoint: "csi.sock"},
		{endpoint: "/run/csi.sock\x00"},
		{endpoint: ""},
	} {
		got, err := socketPath(tc.endpoint)
		if tc.want == "" {
			require.ErrorIs(t, err, ErrInvalidEndpoint, tc.endpoint)
			continue
		}
		require.NoError(t, err, tc.endpoint)
		require.Equal(t, tc.want, got, tc.endpoint)
	}
}

func TestCheckDriverName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{name: "csi.example.com", ok: true},
		{name: "ebs.csi.aws.com", ok: true},
		{name: "Hostpath.CSI.k8s.io", ok: true}, // checked lower-cased, as upstream
		{name: strings.Repeat("a", 63), ok: true},
		{name: strings.Repeat("a", 64)},
		{name: ""},
		{name: "."},
		{name: ".."},
		{name: "../csi"},
		{name: "csi/../../x"},
		{name: "/csi"},
		{name: "csi\\x"},
		{name: "csi..example.com"},
		{name: "csi_example.com"},
		{name: "-csi"},
		{name: "csi-"},
		{name: "csi example"},
	} {
		err := checkDriverName(tc.name)
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, ErrInvalidDriverName, tc.name)
		}
	}
}

func TestUnderRoot(t *testing.T) {
	root := "/var/lib/kubelet"
	for _, tc := range []struct {
		elems []string
		want  string // "" for refused
	}{
		{elems: []string{"plugins", "kubernetes.io", "csi", "csi.example.com", "abc", "globalmount"},
			want: "/var/lib/kubelet/plugins/kubernetes.io/csi/csi.example.com/abc/globalmount"},
		{elems: []string{"plugins", "..", "pods"}, want: "/var/lib/kubelet/pods"},
		{elems: []string{"plugins", "kubernetes.io", "csi", "../../../../etc", "x"}},
		{elems: []string{"plugins", "kubernetes.io", "csi", "../../../../kubelet-other/x"}},
		{elems: []string{".."}},
		{elems: []string{"."}},
		{elems: nil},
		{elems: []string{"/"}, want: ""},
	} {
		got, err := underRoot(root, tc.elems...)
		if tc.want == "" {
			require.ErrorIs(t, err, ErrUnsafePath, tc.elems)
			continue
		}
		require.NoError(t, err, tc.elems)
		require.Equal(t, tc.want, got)
	}
	require.False(t, within("/var/lib/kubelet", "/var/lib/kubelet-other/pods"), "a sibling with the root's name as prefix")
	require.True(t, within("/var/lib/kubelet/", "/var/lib/kubelet/pods"))
}

func TestLoadVolDataRefusesWhatIsNotAVolume(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		ok            bool
	}{
		{name: "valid", content: `{"driverName":"csi.example.com","volumeHandle":"h"}`, ok: true},
		{name: "traversal", content: `{"driverName":"../../../../tmp","volumeHandle":"h"}`},
		{name: "slash", content: `{"driverName":"csi.example.com/x","volumeHandle":"h"}`},
		{name: "no driver", content: `{"volumeHandle":"h"}`},
		{name: "no handle", content: `{"driverName":"csi.example.com"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, volDataFile), []byte(tc.content), 0o600))
			data, err := loadVolData(dir)
			if tc.ok {
				require.NoError(t, err)
				require.Equal(t, "csi.example.com", data[keyDriverName])
				return
			}
			require.ErrorIs(t, err, ErrInvalidVolData)
			require.Nil(t, data)
		})
	}
	_, err := loadVolData(t.TempDir())
	require.ErrorIs(t, err, os.ErrNotExist)
}

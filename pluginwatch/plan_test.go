package pluginwatch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	a1, a2 := socketID{ino: 1, mtime: 1}, socketID{ino: 2, mtime: 2}
	reg := entry{Plugin: Plugin{Socket: "/r/a.sock", Name: "a"}, id: a1}
	none := func(string) bool { return false }
	for _, tc := range []struct {
		name       string
		found      map[string]socketID
		registered map[string]entry
		busy       map[string]bool
		inBackOff  func(string) bool
		want       []operation
	}{
		{name: "nothing"},
		{name: "new socket", found: map[string]socketID{"/r/a.sock": a1},
			want: []operation{{path: "/r/a.sock", register: true, id: a1}}},
		{name: "new socket in back-off", found: map[string]socketID{"/r/a.sock": a1},
			inBackOff: func(p string) bool { return p == "/r/a.sock" }},
		{name: "new socket busy", found: map[string]socketID{"/r/a.sock": a1}, busy: map[string]bool{"/r/a.sock": true}},
		{name: "unchanged", found: map[string]socketID{"/r/a.sock": a1}, registered: map[string]entry{"/r/a.sock": reg}},
		{name: "gone", registered: map[string]entry{"/r/a.sock": reg},
			want: []operation{{path: "/r/a.sock", old: &reg}}},
		{name: "gone but busy", registered: map[string]entry{"/r/a.sock": reg}, busy: map[string]bool{"/r/a.sock": true}},
		{name: "re-created", found: map[string]socketID{"/r/a.sock": a2}, registered: map[string]entry{"/r/a.sock": reg},
			want: []operation{{path: "/r/a.sock", old: &reg, register: true, id: a2}}},
		{name: "in path order, each path once",
			found: map[string]socketID{"/r/c.sock": a1, "/r/b.sock": a2, "/r/a.sock": a2}, registered: map[string]entry{"/r/a.sock": reg},
			want: []operation{{path: "/r/a.sock", old: &reg, register: true, id: a2}, {path: "/r/b.sock", register: true, id: a2},
				{path: "/r/c.sock", register: true, id: a1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBackOff := tc.inBackOff
			if inBackOff == nil {
				inBackOff = none
			}
			var got []operation
			for _, op := range plan(tc.found, tc.registered, tc.busy, inBackOff) {
				got = append(got, *op)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSocketEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint, want string
		refused        bool
	}{
		{endpoint: "", want: "/reg/a.sock"},
		{endpoint: "/plugins/d/csi.sock", want: "/plugins/d/csi.sock"},
		{endpoint: "unix:///plugins/d/csi.sock", want: "/plugins/d/csi.sock"},
		{endpoint: "unix://plugins/d/csi.sock", refused: true},
		{endpoint: "unix:/plugins/d/csi.sock", want: "/plugins/d/csi.sock"},
		{endpoint: "/plugins/d/../d/csi.sock", want: "/plugins/d/csi.sock"},
		{endpoint: "/plugins/d/csi.sock\x00x", refused: true},
		{endpoint: "dns:///h:443", refused: true},
		{endpoint: "passthrough:///h:443", refused: true},
		{endpoint: "tcp://h:443", refused: true},
		{endpoint: "h:443", refused: true},
		{endpoint: "./csi.sock", refused: true},
	} {
		got, err := socketEndpoint(tc.endpoint, "/reg/a.sock")
		if tc.refused {
			require.ErrorIs(t, err, ErrInvalidEndpoint, tc.endpoint)
			continue
		}
		require.NoError(t, err, tc.endpoint)
		require.Equal(t, tc.want, got, tc.endpoint)
	}
}

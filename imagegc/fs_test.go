package imagegc

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type fsInfo struct {
	mountpoint string
	err        error
}

func (f fsInfo) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{
		{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: f.mountpoint}}}}, f.err
}

func TestRuntimeImageFs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		info     fsInfo
		fallback string
		ok       bool
	}{
		"the runtime's mountpoint":        {fsInfo{mountpoint: dir}, "/nonexistent", true},
		"a made-up mountpoint: fallback":  {fsInfo{mountpoint: "/nonexistent/images"}, dir, true},
		"no answer: fallback":             {fsInfo{err: errors.New("unimplemented")}, dir, true},
		"neither measurable: both errors": {fsInfo{mountpoint: "/nonexistent/a"}, "/nonexistent/b", false},
	} {
		st, err := RuntimeImageFs(tc.info, tc.fallback)(ctx)
		if !tc.ok {
			require.ErrorContains(t, err, "/nonexistent/a", name)
			require.ErrorContains(t, err, "/nonexistent/b", name)
			continue
		}
		require.NoError(t, err, name)
		require.NotZero(t, st.CapacityBytes, name)
		require.LessOrEqual(t, st.AvailableBytes, st.CapacityBytes, name)
	}
}

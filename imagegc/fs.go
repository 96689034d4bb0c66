package imagegc

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/internal/diskusage"
)

// ImageFsInfoer is the CRI call RuntimeImageFs makes; a
// criapi.ImageManagerService implements it.
type ImageFsInfoer interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// RuntimeImageFs is a Config.ImageFs that measures the filesystem the
// runtime keeps its images on (the mountpoint its ImageFsInfo names), else
// the filesystem of fallback (the kubelet's root directory; also where a
// simulated runtime's made-up mountpoint cannot be measured).
func RuntimeImageFs(images ImageFsInfoer, fallback string) func(ctx context.Context) (FsStats, error) {
	return func(ctx context.Context) (FsStats, error) {
		paths := []string{fallback}
		if info, err := images.ImageFsInfo(ctx); err == nil {
			for _, fs := range info.GetImageFilesystems() {
				if mp := fs.GetFsId().GetMountpoint(); mp != "" {
					paths = []string{mp, fallback}
					break
				}
			}
		}
		var errs []error
		for _, p := range paths {
			st, err := diskusage.Statfs(p)
			if err == nil {
				return FsStats{CapacityBytes: st.Capacity, AvailableBytes: st.Available}, nil
			}
			errs = append(errs, fmt.Errorf("image filesystem %s: %w", p, err))
		}
		return FsStats{}, errors.Join(errs...)
	}
}

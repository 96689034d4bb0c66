package criinstrument

import (
	"context"

	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageService is a CRI image service whose calls are recorded (see the
// package doc); Metrics.Images makes one. It is safe for concurrent use if
// the wrapped service is.
type ImageService struct {
	is criapi.ImageManagerService
	m  *Metrics
}

var _ criapi.ImageManagerService = (*ImageService)(nil)

// Unwrap returns the wrapped service.
func (s *ImageService) Unwrap() criapi.ImageManagerService { return s.is }

// ListImages records operation list_images.
func (s *ImageService) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	start := s.m.clock.Now()
	out, err := s.is.ListImages(ctx, filter)
	s.m.record("list_images", start, err)
	return out, err
}

// ImageStatus records operation image_status.
func (s *ImageService) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	start := s.m.clock.Now()
	out, err := s.is.ImageStatus(ctx, image, verbose)
	s.m.record("image_status", start, err)
	return out, err
}

// PullImage records operation pull_image.
func (s *ImageService) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	start := s.m.clock.Now()
	out, err := s.is.PullImage(ctx, image, auth, podSandboxConfig)
	s.m.record("pull_image", start, err)
	return out, err
}

// RemoveImage records operation remove_image.
func (s *ImageService) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	start := s.m.clock.Now()
	err := s.is.RemoveImage(ctx, image)
	s.m.record("remove_image", start, err)
	return err
}

// ImageFsInfo records operation image_fs_info.
func (s *ImageService) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	start := s.m.clock.Now()
	out, err := s.is.ImageFsInfo(ctx)
	s.m.record("image_fs_info", start, err)
	return out, err
}

// Close records operation close.
func (s *ImageService) Close(ctx context.Context) error {
	start := s.m.clock.Now()
	err := s.is.Close(ctx)
	s.m.record("close", start, err)
	return err
}

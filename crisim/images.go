package crisim

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Image is an image known to the simulator.
type Image struct {
	// Ref is a tagged ("registry.k8s.io/pause:3.10") or digested
	// ("repo@sha256:...") reference. Lookups match it exactly, or the
	// image ID; references are not normalised.
	Ref string
	// Size in bytes; zero means Config.DefaultImageSize.
	Size uint64
	// Pinned marks the image as exempt from garbage collection.
	Pinned bool
}

// image is the simulated state of one image.
type image struct {
	id      string
	seq     uint64
	tags    []string
	digests []string
	size    uint64
	pinned  bool
}

// ref is what containers report as their ImageRef: the repo digest, as
// containerd does, or the image ID.
func (img *image) ref() string {
	if len(img.digests) > 0 {
		return img.digests[0]
	}
	return img.id
}

func (img *image) known(ref string) bool {
	return ref == img.id || "sha256:"+ref == img.id ||
		slices.Contains(img.tags, ref) || slices.Contains(img.digests, ref)
}

func (img *image) api() *runtimeapi.Image {
	return &runtimeapi.Image{
		Id:          img.id,
		RepoTags:    slices.Clone(img.tags),
		RepoDigests: slices.Clone(img.digests),
		Size:        img.size,
		Pinned:      img.pinned,
		Spec:        &runtimeapi.ImageSpec{Image: img.id},
	}
}

func digest(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "/")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// AddImage makes an image present, as if pulled, and returns its ID. Adding
// a reference that is already present updates its size and pinning.
func (s *Sim) AddImage(img Image) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addImageLocked(img).id
}

func (s *Sim) addImageLocked(img Image) *image {
	size := img.Size
	if size == 0 {
		size = s.cfg.DefaultImageSize
	}
	if existing := s.findImageLocked(img.Ref); existing != nil {
		existing.size = size
		existing.pinned = img.Pinned
		return existing
	}
	out := &image{
		id:     digest("crisim", "config", img.Ref),
		seq:    s.nextLocked(),
		size:   size,
		pinned: img.Pinned,
	}
	if strings.Contains(img.Ref, "@") {
		out.digests = []string{img.Ref}
	} else {
		out.tags = []string{img.Ref}
		out.digests = []string{repository(img.Ref) + "@" + digest("crisim", "manifest", img.Ref)}
	}
	s.images[out.id] = out
	return out
}

// repository strips the tag from a tagged reference.
func repository(ref string) string {
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		return ref[:i]
	}
	return ref
}

func (s *Sim) findImageLocked(ref string) *image {
	for _, img := range s.images {
		if img.known(ref) {
			return img
		}
	}
	return nil
}

func (s *Sim) listImages(f *runtimeapi.ImageFilter) []*runtimeapi.Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	var imgs []*image
	for _, img := range s.images {
		if ref := f.GetImage().GetImage(); ref == "" || img.known(ref) {
			imgs = append(imgs, img)
		}
	}
	slices.SortFunc(imgs, func(a, b *image) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]*runtimeapi.Image, 0, len(imgs))
	for _, img := range imgs {
		out = append(out, img.api())
	}
	return out
}

// imageService implements the CRI image service on top of a Sim.
type imageService struct {
	runtimeapi.UnimplementedImageServiceServer
	sim *Sim
}

// ListImages lists the present images, in the order they were added.
func (i *imageService) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	return &runtimeapi.ListImagesResponse{Images: i.sim.listImages(req.Filter)}, nil
}

// StreamImages streams what ListImages returns, in chunks.
func (i *imageService) StreamImages(req *runtimeapi.StreamImagesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamImagesResponse]) error {
	return sendChunks(i.sim.cfg.StreamChunkSize, i.sim.listImages(req.Filter), func(items []*runtimeapi.Image) error {
		return stream.Send(&runtimeapi.StreamImagesResponse{Images: items})
	})
}

// ImageStatus returns the image, or a nil image if it is not present.
func (i *imageService) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	s := i.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &runtimeapi.ImageStatusResponse{}
	if img := s.findImageLocked(req.GetImage().GetImage()); img != nil {
		resp.Image = img.api()
	}
	return resp, nil
}

// PullImage makes the image present (with Config.DefaultImageSize) and
// returns its ID. Pull failures are simulated with Inject("PullImage", ...).
func (i *imageService) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("image reference must not be empty")
	}
	s := i.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.findImageLocked(ref)
	if img == nil {
		img = s.addImageLocked(Image{Ref: ref})
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.id}, nil
}

// RemoveImage removes the image with all its references. Removing an image
// that is not present succeeds.
func (i *imageService) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	s := i.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	if img := s.findImageLocked(req.GetImage().GetImage()); img != nil {
		delete(s.images, img.id)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// SetImageFsUsage fixes the usage ImageFsInfo reports. Until it is called
// the usage is the total size of the present images, one inode per image.
func (s *Sim) SetImageFsUsage(u FsUsage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.imageFs = &u
}

// ImageFsInfo reports the usage of the simulated image filesystem.
func (i *imageService) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	s := i.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	var u FsUsage
	if s.imageFs != nil {
		u = *s.imageFs
	} else {
		for _, img := range s.images {
			u.UsedBytes += img.size
			u.InodesUsed++
		}
	}
	return &runtimeapi.ImageFsInfoResponse{
		ImageFilesystems: []*runtimeapi.FilesystemUsage{u.report(s.nowNano(), imageFsMountpoint)},
	}, nil
}

package nodestatus

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// DefaultKubeletVersion is reported as kubeletVersion when VersionConfig
// leaves it empty: the kubelet release whose behaviour nodekit follows.
const DefaultKubeletVersion = "v1.36.3"

// VersionConfig configures VersionInfo.
type VersionConfig struct {
	// Host returns the kernel version and the OS image. Default HostVersion.
	Host func() (kernel, osImage string, err error)
	// Runtime returns the container runtime's name and version (CRI
	// Version's RuntimeName and RuntimeVersion). Required. An error reports
	// the version as "Unknown", as the kubelet does.
	Runtime func(ctx context.Context) (name, version string, err error)
	// KubeletVersion is the agent's version. Default DefaultKubeletVersion.
	KubeletVersion string
}

// VersionInfo returns the setter of kernelVersion, osImage,
// containerRuntimeVersion ("<name>://<version>") and kubeletVersion. The
// deprecated kubeProxyVersion is cleared.
func VersionInfo(cfg VersionConfig) (Setter, error) {
	if cfg.Runtime == nil {
		return nil, invalid("VersionInfo: Runtime func is required")
	}
	if cfg.Host == nil {
		cfg.Host = HostVersion
	}
	if cfg.KubeletVersion == "" {
		cfg.KubeletVersion = DefaultKubeletVersion
	}
	return func(ctx context.Context, _ time.Time, node *v1.Node) error {
		kernel, osImage, err := cfg.Host()
		if err != nil {
			return fmt.Errorf("error getting version info: %w", err)
		}
		node.Status.NodeInfo.KernelVersion = kernel
		node.Status.NodeInfo.OSImage = osImage
		name, version, err := cfg.Runtime(ctx)
		if err != nil {
			version = "Unknown"
		}
		node.Status.NodeInfo.ContainerRuntimeVersion = name + "://" + version
		node.Status.NodeInfo.KubeletVersion = cfg.KubeletVersion
		//lint:ignore SA1019 the deprecated field is cleared, as the kubelet does
		node.Status.NodeInfo.KubeProxyVersion = ""
		return nil
	}, nil
}

// HostVersion reads the kernel release from /proc/sys/kernel/osrelease and
// the OS image from PRETTY_NAME in /etc/os-release ("Linux" if absent), the
// sources cadvisor uses.
func HostVersion() (kernel, osImage string, err error) {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "", "", err
	}
	kernel = strings.TrimSpace(string(b))
	osImage = "Linux"
	if rel, err := os.ReadFile("/etc/os-release"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(rel))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				osImage = strings.Trim(v, `"'`)
			}
		}
	}
	return kernel, osImage, nil
}

// DaemonEndpoints returns the setter of status.daemonEndpoints (the
// kubelet's port, 10250 on a real kubelet). Port must be in 0..65535; 0
// reports no endpoint.
func DaemonEndpoints(kubeletPort int32) (Setter, error) {
	if kubeletPort < 0 || kubeletPort > 65535 {
		return nil, invalid("DaemonEndpoints: port %d out of range", kubeletPort)
	}
	return func(_ context.Context, _ time.Time, node *v1.Node) error {
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = kubeletPort
		return nil
	}, nil
}

// GoRuntime returns the setter of operatingSystem and architecture
// (GOOS, GOARCH).
func GoRuntime() Setter {
	return func(_ context.Context, _ time.Time, node *v1.Node) error {
		node.Status.NodeInfo.OperatingSystem = goruntime.GOOS
		node.Status.NodeInfo.Architecture = goruntime.GOARCH
		return nil
	}
}

// Image is one image in the runtime, as ImagesConfig.List reports it.
type Image struct {
	RepoTags    []string
	RepoDigests []string
	Size        int64
}

// Image list limits of the kubelet.
const (
	// DefaultMaxImages is the kubelet's --node-status-max-images.
	DefaultMaxImages = 50
	// MaxNamesPerImage is how many names of one image are reported.
	MaxNamesPerImage = 5
)

// Images returns the setter of status.images: the runtime's images sorted
// by size (largest first), at most maxImages of them (0 means
// DefaultMaxImages, -1 no limit), each with up to MaxNamesPerImage names,
// digests first. list is required.
func Images(maxImages int, list func(ctx context.Context) ([]Image, error)) (Setter, error) {
	if list == nil {
		return nil, invalid("Images: list func is required")
	}
	if maxImages < -1 {
		return nil, invalid("Images: maxImages %d must be -1 (no limit) or more", maxImages)
	}
	if maxImages == 0 {
		maxImages = DefaultMaxImages
	}
	return func(ctx context.Context, _ time.Time, node *v1.Node) error {
		images, err := list(ctx)
		if err != nil {
			node.Status.Images = nil
			return fmt.Errorf("error getting image list: %w", err)
		}
		images = slices.Clone(images)
		slices.SortStableFunc(images, func(a, b Image) int { return cmp.Compare(b.Size, a.Size) })
		if maxImages >= 0 && len(images) > maxImages {
			images = images[:maxImages]
		}
		out := make([]v1.ContainerImage, 0, len(images))
		for _, img := range images {
			names := make([]string, 0, min(MaxNamesPerImage, len(img.RepoDigests)+len(img.RepoTags)))
			for _, n := range slices.Concat(img.RepoDigests, img.RepoTags) {
				if len(names) == MaxNamesPerImage {
					break
				}
				names = append(names, n)
			}
			out = append(out, v1.ContainerImage{Names: names, SizeBytes: img.Size})
		}
		if len(out) == 0 {
			out = nil
		}
		node.Status.Images = out
		return nil
	}, nil
}

// RuntimeHandlers returns the setter of status.runtimeHandlers from the
// runtime's reported handlers (CRI Status' RuntimeHandlers). list is
// required; a nil result leaves the field unset.
func RuntimeHandlers(list func() []v1.NodeRuntimeHandler) (Setter, error) {
	if list == nil {
		return nil, invalid("RuntimeHandlers: list func is required")
	}
	return func(_ context.Context, _ time.Time, node *v1.Node) error {
		if hs := list(); hs != nil {
			node.Status.RuntimeHandlers = hs
		}
		return nil
	}, nil
}

// NodeFeatures returns the setter of status.features from the runtime's
// features (CRI Status' Features). get is required; nil leaves the field
// unset.
func NodeFeatures(get func() *v1.NodeFeatures) (Setter, error) {
	if get == nil {
		return nil, invalid("NodeFeatures: func is required")
	}
	return func(_ context.Context, _ time.Time, node *v1.Node) error {
		if f := get(); f != nil {
			node.Status.Features = f
		}
		return nil
	}, nil
}

// VolumesInUse returns the setter of status.volumesInUse; it sets nothing
// until synced reports that the volume manager has reconciled once, like the
// kubelet. Both funcs are required.
func VolumesInUse(synced func() bool, inUse func() []v1.UniqueVolumeName) (Setter, error) {
	if synced == nil || inUse == nil {
		return nil, invalid("VolumesInUse: synced and inUse funcs are required")
	}
	return func(_ context.Context, _ time.Time, node *v1.Node) error {
		if synced() {
			node.Status.VolumesInUse = inUse()
		}
		return nil
	}, nil
}

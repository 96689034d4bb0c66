// Package crinode reads a CRI runtime for the node status setters, as the
// kubelet's node status does: the runtime's health for the Ready
// condition (RuntimeReady, NetworkReady), its handlers and features, its
// version and its images.
//
// A Source keeps the runtime's last Status answer: RuntimeErrors asks the
// runtime (Ready is computed before the handler and feature setters), and
// RuntimeHandlers and NodeFeatures report from that answer without asking
// again, so one status computation makes one Status call.
//
// Wire it as:
//
//	b.Add(nodestatus.VersionInfo(nodestatus.VersionConfig{Runtime: src.Version}))
//	b.Add(nodestatus.Images(0, src.Images))
//	b.Add(nodestatus.ReadyCondition(nodestatus.ReadyConfig{RuntimeErrors: ..., NetworkErrors: ...}))
//	b.Add(nodestatus.RuntimeHandlers(src.RuntimeHandlers))
//	b.Add(nodestatus.NodeFeatures(src.NodeFeatures))
package crinode

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/nodestatus"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("crinode: invalid config")

// Config configures a Source.
type Config struct {
	// Runtime is the CRI runtime service. Required.
	Runtime criapi.RuntimeService
	// Images is the CRI image service, for Images; nil: no images.
	Images criapi.ImageManagerService
	// RecursiveReadOnlyMounts and UserNamespaces say whether the host
	// gives pods what a runtime handler offers of these features: a
	// handler reports one only if both the runtime and the host support
	// it. False (the zero value) reports it unsupported whatever the
	// runtime can do, as a host that would not honour it must.
	RecursiveReadOnlyMounts, UserNamespaces bool
}

// Source reads the runtime. Build it with New; it is safe for concurrent
// use.
type Source struct {
	cfg  Config
	last atomic.Pointer[runtimeapi.StatusResponse]
}

// New validates cfg and returns a Source; no I/O.
func New(cfg Config) (*Source, error) {
	if cfg.Runtime == nil {
		return nil, fmt.Errorf("%w: Runtime is required", ErrInvalidConfig)
	}
	return &Source{cfg: cfg}, nil
}

// conditions asks the runtime for its status, keeps it, and returns its
// conditions by type.
func (s *Source) conditions(ctx context.Context) (map[string]*runtimeapi.RuntimeCondition, error) {
	st, err := s.cfg.Runtime.Status(ctx, false)
	if err != nil {
		return nil, err
	}
	s.last.Store(st)
	out := map[string]*runtimeapi.RuntimeCondition{}
	for _, c := range st.GetStatus().GetConditions() {
		out[c.Type] = c
	}
	return out, nil
}

// RuntimeErrors is the runtime's part of the Ready condition, with the
// kubelet's messages: it answers Status and reports RuntimeReady.
func (s *Source) RuntimeErrors(ctx context.Context) error {
	conds, err := s.conditions(ctx)
	if err != nil {
		return fmt.Errorf("container runtime is down: %w", err)
	}
	if c := conds[runtimeapi.RuntimeReady]; c == nil || !c.Status {
		return errors.New("container runtime status check may not have completed yet")
	}
	return nil
}

// NetworkErrors is the network's part of the Ready condition: the runtime
// reports NetworkReady. A runtime that does not answer is RuntimeErrors'
// to report.
func (s *Source) NetworkErrors(ctx context.Context) error {
	conds, err := s.conditions(ctx)
	if err != nil {
		return nil
	}
	if c := conds[runtimeapi.NetworkReady]; c == nil || !c.Status {
		return errors.New("container runtime network not ready: NetworkReady=false")
	}
	return nil
}

// RuntimeHandlers are the handlers of the runtime's last Status answer
// (nil before one), with the features both it and the host support.
func (s *Source) RuntimeHandlers() []v1.NodeRuntimeHandler {
	st := s.last.Load()
	if st == nil {
		return nil
	}
	out := make([]v1.NodeRuntimeHandler, 0, len(st.RuntimeHandlers))
	for _, h := range st.RuntimeHandlers {
		rro := s.cfg.RecursiveReadOnlyMounts && h.GetFeatures().GetRecursiveReadOnlyMounts()
		userns := s.cfg.UserNamespaces && h.GetFeatures().GetUserNamespaces()
		out = append(out, v1.NodeRuntimeHandler{Name: h.Name,
			Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &rro, UserNamespaces: &userns}})
	}
	return out
}

// RecursiveReadOnlyMounts says whether the runtime handler of that name
// ("" the default) makes read-only mounts recursive, as its RuntimeHandlers
// entry reports it: false for an unknown handler, before the first Status
// answer, or when the host does not offer the feature. It fits
// podsyncer.Config.RecursiveReadOnlyMounts, so pods get what the Node says.
func (s *Source) RecursiveReadOnlyMounts(handler string) bool {
	return s.cfg.RecursiveReadOnlyMounts && s.handlerFeature(handler).GetRecursiveReadOnlyMounts()
}

// UserNamespaces says whether the runtime handler of that name supports
// user namespaces, as RecursiveReadOnlyMounts does for its feature. It fits
// podsyncer.Config.UserNamespacesSupported.
func (s *Source) UserNamespaces(handler string) bool {
	return s.cfg.UserNamespaces && s.handlerFeature(handler).GetUserNamespaces()
}

// handlerFeature are the features of the named handler in the last Status
// answer; nil if there is none or the handler is unknown.
func (s *Source) handlerFeature(handler string) *runtimeapi.RuntimeHandlerFeatures {
	st := s.last.Load()
	if st == nil {
		return nil
	}
	for _, h := range st.RuntimeHandlers {
		if h.Name == handler {
			return h.GetFeatures()
		}
	}
	return nil
}

// NodeFeatures are the node's features from the runtime's last Status
// answer: supplementalGroupsPolicy Strict when the runtime supports it.
func (s *Source) NodeFeatures() *v1.NodeFeatures {
	st := s.last.Load()
	if st == nil || st.Features == nil {
		return nil
	}
	strict := st.Features.SupplementalGroupsPolicy
	return &v1.NodeFeatures{SupplementalGroupsPolicy: &strict}
}

// Version is the runtime's name and version, for
// nodestatus.VersionConfig.Runtime.
func (s *Source) Version(ctx context.Context) (name, version string, err error) {
	v, err := s.cfg.Runtime.Version(ctx, "v1")
	if err != nil {
		return "", "", err
	}
	return v.RuntimeName, v.RuntimeVersion, nil
}

// Images lists the runtime's images for nodestatus.Images.
func (s *Source) Images(ctx context.Context) ([]nodestatus.Image, error) {
	if s.cfg.Images == nil {
		return nil, nil
	}
	imgs, err := s.cfg.Images.ListImages(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := make([]nodestatus.Image, 0, len(imgs))
	for _, i := range imgs {
		out = append(out, nodestatus.Image{RepoTags: i.RepoTags, RepoDigests: i.RepoDigests, Size: int64(i.Size)})
	}
	return out, nil
}

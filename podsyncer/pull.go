package podsyncer

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/podenv"
	"github.com/nodekit/nodekit/podsyncer/images"
)

// ImagePullerConfig configures an ImagePuller; Images is required.
type ImagePullerConfig struct {
	// Images is the runtime's image service.
	Images criapi.ImageManagerService
	// Secrets reads the pods' image pull secrets; nil pulls anonymously.
	Secrets podenv.Objects
	// MaxParallelPulls bounds concurrent pulls; 0 pulls one image at a
	// time (the kubelet's serializeImagePulls), a negative value leaves
	// them unbounded (serializeImagePulls false without maxParallelImagePulls).
	MaxParallelPulls int
	// PodLogsDir is the pod log root, part of the sandbox config a pull
	// is made for; empty means DefaultPodLogsDir.
	PodLogsDir string
	// Recorder receives Pulling, Pulled, Failed and BackOff events; nil
	// drops them.
	Recorder record.EventRecorder
	// Clock drives the pull back-off; nil means the real clock.
	Clock clock.Clock
	// Pulls, if set, is told when each pod's pulls start and end
	// (images.Config.Pulls); podstartup.Tracker is one.
	Pulls images.PullObserver
	// Registerer receives kubelet_image_pull_duration_seconds
	// (images.Config.Registerer); nil: none.
	Registerer prometheus.Registerer
}

// ImagePuller pulls the images of a node's pods — containers' for the
// Syncer and image volumes' for the volume manager — with one set of
// pull slots and back-offs, each pod's pull secrets, and the kubelet's
// events. Share one between the Syncer (Config.Puller) and the volume
// manager (ImageVolume as volumes.Config.Images).
type ImagePuller struct {
	puller   *images.Puller
	secrets  podenv.Objects
	recorder record.EventRecorder
	logsDir  string
}

// NewImagePuller validates cfg and returns an ImagePuller; no I/O.
func NewImagePuller(cfg ImagePullerConfig) (*ImagePuller, error) {
	if cfg.Images == nil {
		return nil, fmt.Errorf("%w: ImagePullerConfig.Images is required", ErrInvalidConfig)
	}
	if cfg.PodLogsDir == "" {
		cfg.PodLogsDir = DefaultPodLogsDir
	}
	p, err := images.New(images.Config{Images: cfg.Images, Clock: cfg.Clock, MaxParallelPulls: cfg.MaxParallelPulls, Pulls: cfg.Pulls,
		Registerer: cfg.Registerer})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &ImagePuller{puller: p, secrets: cfg.Secrets, recorder: cfg.Recorder, logsDir: cfg.PodLogsDir}, nil
}

// ensure makes container c's image present as its pull policy says.
func (p *ImagePuller) ensure(ctx context.Context, pod *v1.Pod, c *v1.Container, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	req := images.Request{Pod: pod, Container: c, Keyring: p.keyring(ctx, pod, c), Sandbox: sandbox}
	return p.puller.Ensure(ctx, req, func(e images.Event) { p.containerEvent(pod, c, e.Type, e.Reason, "%s", e.Message) })
}

// ImageVolume makes an image volume's image present as its pull policy
// says (the API's default: Always for no tag or :latest), with the pod's
// pull secrets, and returns the runtime's image reference; events go to
// the pod. It is the image source of volumes.Config.Images.
func (p *ImagePuller) ImageVolume(ctx context.Context, pod *v1.Pod, src *v1.ImageVolumeSource) (string, error) {
	policy := src.PullPolicy
	if policy == "" {
		policy = v1.PullIfNotPresent
		if strings.HasSuffix(src.Reference, ":latest") || !strings.Contains(src.Reference[strings.LastIndex(src.Reference, "/")+1:], ":") {
			policy = v1.PullAlways
		}
	}
	c := &v1.Container{Name: "image-volume", Image: src.Reference, ImagePullPolicy: policy}
	req := images.Request{Pod: pod, Container: c, Keyring: p.keyring(ctx, pod, c), Sandbox: sandboxConfig(pod, 0, p.logsDir)}
	return p.puller.Ensure(ctx, req, func(e images.Event) {
		if p.recorder != nil {
			p.recorder.Eventf(pod, e.Type, e.Reason, "%s", e.Message)
		}
	})
}

// keyring reads the pod's image pull secrets (the service account's are
// in the pod's spec already, put there at admission by the API server).
// A secret that cannot be read is reported and skipped: the pull may
// still succeed without it, as with the kubelet.
func (p *ImagePuller) keyring(ctx context.Context, pod *v1.Pod, c *v1.Container) *images.Keyring {
	if p.secrets == nil || len(pod.Spec.ImagePullSecrets) == 0 {
		return nil
	}
	var secrets []*v1.Secret
	var missing []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		sec, err := p.secrets.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			klog.FromContext(ctx).Info("Unable to retrieve pull secret, the image pull may not succeed", "pod", klog.KObj(pod), "secret", ref.Name, "err", err)
			missing = append(missing, pod.Namespace+"/"+ref.Name)
			continue
		}
		secrets = append(secrets, sec)
	}
	if len(missing) > 0 {
		p.containerEvent(pod, c, v1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	k, err := images.KeyringFromSecrets(secrets)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Invalid image pull secret, pulling without it", "pod", klog.KObj(pod))
		return nil
	}
	return k
}

func (p *ImagePuller) containerEvent(pod *v1.Pod, c *v1.Container, typ, reason, format string, args ...any) {
	containerEvent(p.recorder, pod, c, typ, reason, format, args...)
}

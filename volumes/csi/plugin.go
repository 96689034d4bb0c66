package csi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/clockctx"
	"github.com/nodekit/nodekit/volumes"
)

// PluginName is the plugin's directory under a pod's volumes, as the
// kubelet names it on disk.
const PluginName = "kubernetes.io~csi"

// Config configures a Plugin.
type Config struct {
	// RootDir is the kubelet's --root-dir (the volumes.Manager's).
	// Required.
	RootDir string
	// NodeName names the node in attachment names. Required.
	NodeName string
	// Drivers is the registry the drivers registered with. Required.
	Drivers *Drivers
	// Client reads, as the node identity, CSIDriver objects, the node's
	// attached volumes, VolumeAttachments, the secrets volumes name, and
	// requests the service account tokens a CSIDriver asks for. nil:
	// inline volumes of drivers that need none of these only.
	Client kubernetes.Interface
	// Mounter lists mount points (to never remove a directory a driver
	// left mounted). Default volumes.HostMounter.
	Mounter volumes.Mounter
	// Clock bounds the calls to drivers. Default the real clock.
	Clock clock.WithTicker
	// Timeout bounds each call to a driver; default DefaultTimeout.
	Timeout time.Duration
}

// Plugin is the volumes.Plugin of CSI volumes: inline (ephemeral) csi
// volumes and PersistentVolumes with a csi source, mounted through their
// registered driver's node service. Add it to volumes.Config.Plugins.
type Plugin struct {
	cfg Config
	// rootAsGiven is Config.RootDir before symlinks were resolved: a
	// volume directory under either is under the root directory.
	rootAsGiven string

	mu        sync.Mutex
	published map[string]volumes.Mount // by volume directory
	staged    map[string]bool          // staging paths
	settingUp map[string]int           // unique names of persistent volumes being set up
	locks     map[string]*sync.Mutex   // by staging path
}

var (
	_ volumes.Plugin           = (*Plugin)(nil)
	_ volumes.PersistentPlugin = (*Plugin)(nil)
	_ volumes.TearDowner       = (*Plugin)(nil)
)

// New checks cfg and returns a Plugin.
func New(cfg Config) (*Plugin, error) {
	switch {
	case cfg.RootDir == "" || !filepath.IsAbs(cfg.RootDir):
		return nil, fmt.Errorf("%w: RootDir %q must be an absolute path", ErrInvalidConfig, cfg.RootDir)
	case cfg.NodeName == "":
		return nil, fmt.Errorf("%w: NodeName is required", ErrInvalidConfig)
	case cfg.Drivers == nil:
		return nil, fmt.Errorf("%w: Drivers is required", ErrInvalidConfig)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: Timeout %v is negative", ErrInvalidConfig, cfg.Timeout)
	}
	given := filepath.Clean(cfg.RootDir)
	root, err := filepath.EvalSymlinks(cfg.RootDir)
	if err == nil {
		cfg.RootDir = root // as the volumes.Manager resolves it
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Mounter == nil {
		cfg.Mounter = volumes.HostMounter()
	}
	return &Plugin{cfg: cfg, rootAsGiven: given, published: map[string]volumes.Mount{}, staged: map[string]bool{},
		settingUp: map[string]int{}, locks: map[string]*sync.Mutex{}}, nil
}

// Name is the plugin's directory name.
func (*Plugin) Name() string { return PluginName }

// CanSupport reports whether v is an inline csi volume.
func (*Plugin) CanSupport(v *v1.Volume) bool { return v.CSI != nil }

// CanSupportPersistent reports whether pv has a csi source.
func (*Plugin) CanSupportPersistent(pv *v1.PersistentVolume) bool { return pv.Spec.CSI != nil }

// publishArgs is what one NodePublishVolume needs.
type publishArgs struct {
	driver, handle, fsType string
	readOnly               bool
	mode                   storagev1.VolumeLifecycleMode
	attrs, publishContext  map[string]string
	secretRef, stageRef    *v1.SecretReference
	mountFlags             []string
	access                 v1.PersistentVolumeAccessMode
}

// SetUp publishes the volume at <v.Dir>/mount through its driver: for a
// persistent volume, after the attach/detach controller reports it
// attached to the node (and its VolumeAttachment attached, if the driver
// needs attaching), and staged at the volume's global path if the driver
// stages. A volume set up before returns at once.
func (p *Plugin) SetUp(ctx context.Context, v volumes.Volume) (volumes.Mount, error) {
	p.mu.Lock()
	mnt, ok := p.published[v.Dir]
	p.mu.Unlock()
	if ok {
		return mnt, nil
	}
	if err := p.checkVolumeDir(v.Dir); err != nil {
		return volumes.Mount{}, err
	}
	args := p.argsOf(v)
	node, err := p.cfg.Drivers.node(args.driver)
	if err != nil {
		return volumes.Mount{}, err
	}
	obj, err := p.driverObject(ctx, args.driver)
	if err != nil {
		return volumes.Mount{}, err
	}
	if err := checkLifecycle(obj, args); err != nil {
		return volumes.Mount{}, err
	}
	caps, err := p.capabilities(ctx, node)
	if err != nil {
		return volumes.Mount{}, err
	}
	staging := ""
	if args.mode == storagev1.VolumeLifecyclePersistent {
		unique := uniqueName(args.driver, args.handle)
		p.mu.Lock()
		p.settingUp[unique]++
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			if p.settingUp[unique]--; p.settingUp[unique] == 0 {
				delete(p.settingUp, unique)
			}
			p.mu.Unlock()
		}()
		if args.publishContext, err = p.waitAttached(ctx, obj, args); err != nil {
			return volumes.Mount{}, err
		}
		if caps[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
			if staging, err = p.stagingPath(args.driver, args.handle); err != nil {
				return volumes.Mount{}, err
			}
		}
	}
	secrets, err := p.secrets(ctx, args.secretRef)
	if err != nil {
		return volumes.Mount{}, err
	}
	attrs := args.attrs
	if obj != nil && obj.Spec.PodInfoOnMount != nil && *obj.Spec.PodInfoOnMount {
		attrs = merge(attrs, podInfo(v.Pod, args.mode))
	}
	tokens, err := p.tokens(ctx, obj, v.Pod)
	if err != nil {
		return volumes.Mount{}, err
	}
	if obj != nil && obj.Spec.ServiceAccountTokenInSecrets != nil && *obj.Spec.ServiceAccountTokenInSecrets {
		secrets = merge(secrets, tokens)
	} else {
		attrs = merge(attrs, tokens)
	}
	capability := volumeCapability(args, caps)
	fsGroup := volumes.FSGroup(v.Pod)
	if fsGroup != nil && caps[csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP] {
		capability.GetMount().VolumeMountGroup = strconv.FormatInt(*fsGroup, 10)
	}

	var unlock func()
	if staging != "" {
		unlock = p.lock(staging)
		if err := p.stage(ctx, node, args, staging, capability); err != nil {
			unlock()
			return volumes.Mount{}, err
		}
	}
	target := filepath.Join(v.Dir, "mount")
	err = p.publish(ctx, node, v, args, staging, target, capability, secrets, attrs)
	if unlock != nil {
		unlock()
	}
	if err != nil {
		return volumes.Mount{}, err
	}
	if fsGroup != nil && !caps[csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP] && applyFSGroup(obj, v, args) {
		if err := volumes.SetOwnership(v.Pod, target, args.readOnly); err != nil {
			// Published: TearDown will unpublish it.
			return volumes.Mount{}, fmt.Errorf("applyFSGroup failed for vol %s: %w", args.handle, err)
		}
	}
	mnt = volumes.Mount{HostPath: target, ReadOnly: args.readOnly}
	p.mu.Lock()
	p.published[v.Dir] = mnt
	p.mu.Unlock()
	klog.FromContext(ctx).V(3).Info("CSI volume published", "pod", klog.KObj(v.Pod), "volume", v.Spec.Name, "driver", args.driver, "handle", args.handle)
	return mnt, nil
}

// argsOf reads the volume's source.
func (p *Plugin) argsOf(v volumes.Volume) publishArgs {
	if v.PV == nil {
		src := v.Spec.CSI
		a := publishArgs{driver: src.Driver, handle: ephemeralHandle(string(v.Pod.UID), v.Spec.Name),
			mode: storagev1.VolumeLifecycleEphemeral, attrs: src.VolumeAttributes, access: v1.ReadWriteOnce,
			readOnly: src.ReadOnly != nil && *src.ReadOnly}
		if src.FSType != nil {
			a.fsType = *src.FSType
		}
		if src.NodePublishSecretRef != nil {
			a.secretRef = &v1.SecretReference{Name: src.NodePublishSecretRef.Name, Namespace: v.Pod.Namespace}
		}
		return a
	}
	src := v.PV.Spec.CSI
	a := publishArgs{driver: src.Driver, handle: src.VolumeHandle, mode: storagev1.VolumeLifecyclePersistent,
		attrs: src.VolumeAttributes, fsType: src.FSType, secretRef: src.NodePublishSecretRef,
		stageRef: src.NodeStageSecretRef, mountFlags: v.PV.Spec.MountOptions, access: v1.ReadWriteOnce, readOnly: src.ReadOnly}
	if c := v.Spec.PersistentVolumeClaim; c != nil && c.ReadOnly {
		a.readOnly = true
	}
	if len(v.PV.Spec.AccessModes) > 0 {
		a.access = v.PV.Spec.AccessModes[0]
	}
	return a
}

// driverObject reads the driver's CSIDriver object; nil if it has none
// (the defaults then: attach required, no pod info, persistent only).
func (p *Plugin) driverObject(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	if p.cfg.Client == nil {
		return nil, nil
	}
	obj, err := p.cfg.Client.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get CSIDriver %s: %w", name, err)
	}
	return obj, nil
}

// checkLifecycle refuses a volume of a mode its driver does not support.
func checkLifecycle(obj *storagev1.CSIDriver, a publishArgs) error {
	modes := []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	if obj != nil && len(obj.Spec.VolumeLifecycleModes) > 0 {
		modes = obj.Spec.VolumeLifecycleModes
	}
	if !slices.Contains(modes, a.mode) {
		return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", a.mode, a.driver, modes)
	}
	return nil
}

// capabilities asks the driver's node service what it can do.
func (p *Plugin) capabilities(ctx context.Context, node csipb.NodeClient) (map[csipb.NodeServiceCapability_RPC_Type]bool, error) {
	callCtx, cancel := clockctx.WithTimeout(ctx, p.cfg.Clock, p.cfg.Timeout)
	defer cancel()
	resp, err := node.NodeGetCapabilities(callCtx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return nil, fmt.Errorf("NodeGetCapabilities: %w", p.timedOut(callCtx, err))
	}
	caps := map[csipb.NodeServiceCapability_RPC_Type]bool{}
	for _, c := range resp.GetCapabilities() {
		caps[c.GetRpc().GetType()] = true
	}
	return caps, nil
}

// waitAttached checks, for a driver that attaches (its CSIDriver does not
// say attachRequired: false), that the attach/detach controller reports
// the volume attached to this node and returns its publish context (from
// the VolumeAttachment). An error means not yet: the volume manager
// retries with back-off. A volume of a driver that does not attach is not
// attachable, and the controller never lists it.
func (p *Plugin) waitAttached(ctx context.Context, obj *storagev1.CSIDriver, a publishArgs) (map[string]string, error) {
	if obj != nil && obj.Spec.AttachRequired != nil && !*obj.Spec.AttachRequired {
		return nil, nil
	}
	if p.cfg.Client == nil {
		return nil, errors.New("no API client to check that the volume is attached (standalone node)")
	}
	unique := v1.UniqueVolumeName(uniqueName(a.driver, a.handle))
	node, err := p.cfg.Client.CoreV1().Nodes().Get(ctx, p.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read node %s: %w", p.cfg.NodeName, err)
	}
	if !slices.ContainsFunc(node.Status.VolumesAttached, func(av v1.AttachedVolume) bool { return av.Name == unique }) {
		return nil, fmt.Errorf("volume %s is not attached according to node status yet", unique)
	}
	name := attachmentName(a.handle, a.driver, p.cfg.NodeName)
	va, err := p.cfg.Client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("VolumeAttachment %s: %w", name, err)
	}
	if !va.Status.Attached {
		if e := va.Status.AttachError; e != nil {
			return nil, fmt.Errorf("VolumeAttachment %s: attach failed: %s", name, e.Message)
		}
		return nil, fmt.Errorf("VolumeAttachment %s is not attached yet", name)
	}
	return va.Status.AttachmentMetadata, nil
}

// secrets reads a secret the driver is to receive.
func (p *Plugin) secrets(ctx context.Context, ref *v1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	if p.cfg.Client == nil {
		return nil, fmt.Errorf("no API client to read secret %s/%s (standalone node)", ref.Namespace, ref.Name)
	}
	s, err := p.cfg.Client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("fetching secret %s/%s failed: %w", ref.Namespace, ref.Name, err)
	}
	out := make(map[string]string, len(s.Data))
	for k, b := range s.Data {
		out[k] = string(b)
	}
	return out, nil
}

// tokens requests the service account tokens the CSIDriver asks for,
// bound to the pod, as csi.storage.k8s.io/serviceAccount.tokens.
func (p *Plugin) tokens(ctx context.Context, obj *storagev1.CSIDriver, pod *v1.Pod) (map[string]string, error) {
	if obj == nil || len(obj.Spec.TokenRequests) == 0 {
		return nil, nil
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	out := map[string]authenticationv1.TokenRequestStatus{}
	for _, r := range obj.Spec.TokenRequests {
		audiences := []string{}
		if r.Audience != "" {
			audiences = []string{r.Audience}
		}
		tr, err := p.cfg.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: r.ExpirationSeconds,
				BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("service account token for CSI driver %s: %w", obj.Name, err)
		}
		out[r.Audience] = tr.Status
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return map[string]string{"csi.storage.k8s.io/serviceAccount.tokens": string(b)}, nil
}

// stage stages a persistent volume at its global path once per node.
// Called with the staging path locked.
func (p *Plugin) stage(ctx context.Context, node csipb.NodeClient, a publishArgs, staging string, capability *csipb.VolumeCapability) error {
	p.mu.Lock()
	done := p.staged[staging]
	p.mu.Unlock()
	if done {
		return nil
	}
	dataDir := filepath.Dir(staging)
	if err := os.MkdirAll(staging, 0o750); err != nil { // the CO creates it (CSI spec)
		return fmt.Errorf("create staging directory: %w", err)
	}
	if err := saveVolData(dataDir, map[string]string{keyDriverName: a.driver, keyVolumeHandle: a.handle}); err != nil {
		return err
	}
	secrets, err := p.secrets(ctx, a.stageRef)
	if err != nil {
		return err
	}
	callCtx, cancel := clockctx.WithTimeout(ctx, p.cfg.Clock, p.cfg.Timeout)
	defer cancel()
	_, err = node.NodeStageVolume(callCtx, &csipb.NodeStageVolumeRequest{VolumeId: a.handle, PublishContext: a.publishContext,
		StagingTargetPath: staging, VolumeCapability: capability, Secrets: secrets, VolumeContext: a.attrs})
	if err = p.timedOut(callCtx, err); err != nil {
		return fmt.Errorf("MountVolume.MountDevice failed for volume %s: rpc NodeStageVolume: %w", a.handle, err)
	}
	p.mu.Lock()
	p.staged[staging] = true
	p.mu.Unlock()
	return nil
}

// publish records the volume's data next to it and publishes it.
func (p *Plugin) publish(ctx context.Context, node csipb.NodeClient, v volumes.Volume, a publishArgs, staging, target string,
	capability *csipb.VolumeCapability, secrets, attrs map[string]string) error {
	if err := os.MkdirAll(v.Dir, 0o750); err != nil {
		return fmt.Errorf("create volume directory: %w", err)
	}
	err := saveVolData(v.Dir, map[string]string{keySpecVolID: specVolID(v), keyVolumeHandle: a.handle,
		keyDriverName: a.driver, keyNodeName: p.cfg.NodeName, keyLifecycle: string(a.mode),
		keyAttachmentID: attachmentName(a.handle, a.driver, p.cfg.NodeName)})
	if err != nil {
		return err
	}
	callCtx, cancel := clockctx.WithTimeout(ctx, p.cfg.Clock, p.cfg.Timeout)
	defer cancel()
	_, err = node.NodePublishVolume(callCtx, &csipb.NodePublishVolumeRequest{VolumeId: a.handle, PublishContext: a.publishContext,
		StagingTargetPath: staging, TargetPath: target, VolumeCapability: capability, Readonly: a.readOnly,
		Secrets: secrets, VolumeContext: attrs})
	if err = p.timedOut(callCtx, err); err == nil {
		return nil
	}
	if final(err) {
		// Nothing was published: leave nothing behind.
		if p.isMountPoint(target) == nil {
			_ = os.Remove(target)
			_ = os.Remove(filepath.Join(v.Dir, volDataFile))
			_ = os.Remove(v.Dir)
		}
	}
	return fmt.Errorf("rpc NodePublishVolume: %w", err)
}

// timedOut adds to a call's error that the call's context timed out.
func (p *Plugin) timedOut(callCtx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(callCtx), context.DeadlineExceeded) {
		return fmt.Errorf("%w (timed out after %v)", err, p.cfg.Timeout)
	}
	return err
}

// specVolID is the name vol_data.json records: the PersistentVolume's
// name, or the inline volume's.
func specVolID(v volumes.Volume) string {
	if v.PV != nil {
		return v.PV.Name
	}
	return v.Spec.Name
}

// final reports whether a failed call certainly did nothing (the CSI
// spec's codes after which a retry may find the operation done are not).
func final(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

// volumeCapability is the capability of a filesystem volume of the
// volume's access mode.
func volumeCapability(a publishArgs, caps map[csipb.NodeServiceCapability_RPC_Type]bool) *csipb.VolumeCapability {
	multi := caps[csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER]
	mode := csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	switch a.access {
	case v1.ReadWriteOnce:
		if multi {
			mode = csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
	case v1.ReadWriteOncePod:
		if multi {
			mode = csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
	case v1.ReadOnlyMany:
		mode = csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case v1.ReadWriteMany:
		mode = csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	}
	return &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: a.fsType, MountFlags: a.mountFlags}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode},
	}
}

// applyFSGroup says whether the kubelet, not the driver, gives the volume
// the pod's fsGroup, by the CSIDriver's fsGroupPolicy (default
// ReadWriteOnceWithFSType: with an fsType, for a volume writable by one
// node; an inline volume is mounted ReadWriteOnce).
func applyFSGroup(obj *storagev1.CSIDriver, v volumes.Volume, a publishArgs) bool {
	policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	if obj != nil && obj.Spec.FSGroupPolicy != nil {
		policy = *obj.Spec.FSGroupPolicy
	}
	switch policy {
	case storagev1.FileFSGroupPolicy:
		return true
	case storagev1.NoneFSGroupPolicy:
		return false
	}
	if a.fsType == "" {
		return false
	}
	if v.PV == nil {
		return true
	}
	return slices.Contains(v.PV.Spec.AccessModes, v1.ReadWriteOnce) || slices.Contains(v.PV.Spec.AccessModes, v1.ReadWriteOncePod)
}

// podInfo is what a driver with podInfoOnMount receives about the pod.
func podInfo(pod *v1.Pod, mode storagev1.VolumeLifecycleMode) map[string]string {
	return map[string]string{
		"csi.storage.k8s.io/pod.name":            pod.Name,
		"csi.storage.k8s.io/pod.namespace":       pod.Namespace,
		"csi.storage.k8s.io/pod.uid":             string(pod.UID),
		"csi.storage.k8s.io/serviceAccount.name": pod.Spec.ServiceAccountName,
		"csi.storage.k8s.io/ephemeral":           strconv.FormatBool(mode == storagev1.VolumeLifecycleEphemeral),
	}
}

// merge returns a with b's entries added (b wins), a new map if b has any.
func merge(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = make(map[string]string, len(b))
	}
	maps.Copy(out, b)
	return out
}

// lock serialises staging and unstaging of one volume.
func (p *Plugin) lock(staging string) func() {
	p.mu.Lock()
	l := p.locks[staging]
	if l == nil {
		l = &sync.Mutex{}
		p.locks[staging] = l
	}
	p.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// isMountPoint returns an error if path is a mount point (or the mount
// table cannot be read).
func (p *Plugin) isMountPoint(path string) error {
	points, err := p.cfg.Mounter.MountPoints()
	if err != nil {
		return err
	}
	if slices.Contains(points, path) {
		return fmt.Errorf("%s is still mounted", path)
	}
	return nil
}

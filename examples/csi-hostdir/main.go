// Command csi-hostdir is the harness's CSI driver: node-local volumes kept
// as directories under --data-dir, published by bind mounts, with a
// dynamic provisioner for its StorageClasses. It runs on the host next to
// the node agent (this sandbox has no mount propagation into containers)
// and registers through <root-dir>/plugins_registry like any driver, so
// the upstream kubelet and nodekit's agent are measured on the same
// driver. The harness's own: csi-driver-host-path and the external
// sidecars cannot be built here (not on the module proxy).
//
// Provisioning: a claim of a StorageClass whose provisioner is --name gets
// a PersistentVolume (handle pvc-<uid>, node affinity to --node-name)
// once the PV controller hands it over (and, with WaitForFirstConsumer,
// once a node is selected); a Released volume whose reclaim policy is
// Delete loses its data and its object. No attach (attachRequired:
// false), no snapshots, clones, expansion or raw block.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/volumes/csi/csitest"
)

const (
	annProvisioner   = "volume.kubernetes.io/storage-provisioner"
	annProvisionerB  = "volume.beta.kubernetes.io/storage-provisioner"
	annSelectedNode  = "volume.kubernetes.io/selected-node"
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
)

func main() {
	name := flag.String("name", "csi.nodekit.io", "the driver's name")
	rootDir := flag.String("root-dir", "/var/lib/kubelet", "the node agent's --root-dir (registration socket in plugins_registry)")
	dataDir := flag.String("data-dir", "/var/lib/csi-hostdir", "where volumes are kept")
	kubeconfig := flag.String("kubeconfig", "", "a kubeconfig allowed to manage PersistentVolumes and CSIDrivers")
	nodeName := flag.String("node-name", "", "the node the volumes are on")
	flag.Parse()
	if *kubeconfig == "" || *nodeName == "" {
		fmt.Fprintln(os.Stderr, "csi-hostdir: --kubeconfig and --node-name are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *name, *rootDir, *dataDir, *kubeconfig, *nodeName); err != nil {
		fmt.Fprintln(os.Stderr, "csi-hostdir:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, name, rootDir, dataDir, kubeconfig, nodeName string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := ensureCSIDriver(ctx, client, name); err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	regDir := filepath.Join(rootDir, "plugins_registry")
	if err := os.MkdirAll(regDir, 0o750); err != nil {
		return err
	}
	socket := filepath.Join(regDir, name+"-reg.sock")
	_ = os.Remove(socket) // a previous run's
	drv := &csitest.Driver{Name: name, NodeID: nodeName, Stage: true, DataDir: dataDir,
		Topology: map[string]string{"topology." + name + "/node": nodeName}, Bind: bind, Unbind: unbind}
	if err := drv.Serve(socket); err != nil {
		return err
	}
	defer drv.Stop()
	klog.InfoS("CSI driver serving", "driver", name, "socket", socket, "data", dataDir)
	p := provisioner{client: client, name: name, node: nodeName, dataDir: dataDir}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if err := p.pass(ctx); err != nil {
			klog.ErrorS(err, "Provisioner pass")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ensureCSIDriver creates the driver's CSIDriver object: no attach, pod
// info on mount, persistent and inline volumes, fsGroup applied by the
// node agent.
func ensureCSIDriver(ctx context.Context, client kubernetes.Interface, name string) error {
	_, err := client.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true),
			FSGroupPolicy:        ptr.To(storagev1.FileFSGroupPolicy),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}},
		metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func bind(source, target string, readOnly bool) error {
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", source, target, err)
	}
	if readOnly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return fmt.Errorf("remount %s read-only: %w", target, err)
		}
	}
	return nil
}

// unbind unmounts target if it is a mount point (every layer of it).
func unbind(target string) error {
	for {
		err := unix.Unmount(target, 0)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			return nil // not (or no longer) a mount point
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", target, err)
		}
	}
}

type provisioner struct {
	client     kubernetes.Interface
	name, node string
	dataDir    string
}

// pass provisions the claims handed to the driver and deletes the
// released volumes it provisioned.
func (p provisioner) pass(ctx context.Context) error {
	claims, err := p.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Spec.VolumeName != "" || c.DeletionTimestamp != nil ||
			(c.Annotations[annProvisioner] != p.name && c.Annotations[annProvisionerB] != p.name) {
			continue
		}
		errs = append(errs, p.provision(ctx, c))
	}
	pvs, err := p.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if pv.Annotations[annProvisionedBy] != p.name || pv.Status.Phase != v1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
			continue
		}
		if err := os.RemoveAll(filepath.Join(p.dataDir, pv.Spec.CSI.VolumeHandle)); err != nil {
			errs = append(errs, err)
			continue
		}
		err := p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p provisioner) provision(ctx context.Context, c *v1.PersistentVolumeClaim) error {
	if c.Spec.StorageClassName == nil {
		return nil
	}
	sc, err := p.client.StorageV1().StorageClasses().Get(ctx, *c.Spec.StorageClassName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer && c.Annotations[annSelectedNode] == "" {
		return nil
	}
	if c.Spec.VolumeMode != nil && *c.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return nil // not supported: the claim stays pending
	}
	if c.Spec.DataSource != nil || c.Spec.DataSourceRef != nil {
		return nil // no clones or snapshots
	}
	handle := "pvc-" + string(c.UID)
	attrs := map[string]string{}
	fsType := ""
	for k, v := range sc.Parameters {
		switch {
		case k == "csi.storage.k8s.io/fstype":
			fsType = v
		case !strings.HasPrefix(k, "csi.storage.k8s.io/"):
			attrs[k] = v
		}
	}
	reclaim := v1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: handle, Annotations: map[string]string{annProvisionedBy: p.name}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: c.Spec.Resources.Requests[v1.ResourceStorage]},
			AccessModes:                   c.Spec.AccessModes,
			VolumeMode:                    c.Spec.VolumeMode,
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion},
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              sc.Name,
			MountOptions:                  sc.MountOptions,
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "topology." + p.name + "/node", Operator: v1.NodeSelectorOpIn, Values: []string{p.node}}}}}}},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: p.name, VolumeHandle: handle,
				FSType: fsType, VolumeAttributes: attrs}},
		},
	}
	if err := os.MkdirAll(filepath.Join(p.dataDir, handle), 0o777); err != nil {
		return err
	}
	_, err = p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		klog.InfoS("Provisioned", "claim", klog.KObj(c), "pv", pv.Name)
	}
	return err
}

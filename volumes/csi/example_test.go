package csi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/pluginwatch"
	"github.com/nodekit/nodekit/volumes"
	"github.com/nodekit/nodekit/volumes/csi"
	"github.com/nodekit/nodekit/volumes/csi/csitest"
)

// A driver registers through the registration directory; a pod's inline
// CSI volume is then published through it by the volume manager.
func Example() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "csi")
	defer func() { _ = os.RemoveAll(root) }()
	client := fake.NewClientset(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}}})

	drivers, _ := csi.NewDrivers(csi.DriversConfig{}) // with a Client: CSINode and node annotation
	defer drivers.Close()
	plugin, _ := csi.New(csi.Config{RootDir: root, NodeName: "node-a", Drivers: drivers, Client: client, Mounter: volumes.DirOnly()})
	vm, _ := volumes.New(volumes.Config{RootDir: root, Plugins: []volumes.Plugin{plugin}, Mounter: volumes.DirOnly()})
	watcher, _ := pluginwatch.New(pluginwatch.Config{Dir: filepath.Join(root, "plugins_registry"),
		Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: drivers}})

	// The driver (here a fake) serves its registration and CSI services.
	driver := &csitest.Driver{Name: "csi.example.com", NodeID: "node-a"}
	_ = driver.Serve(filepath.Join(root, "plugins_registry", "csi.example.com-reg.sock"))
	defer driver.Stop()
	_ = watcher.Sync(ctx) // Run does this every second
	fmt.Println("registered:", drivers.Names())

	pod := podWithInlineVolume("csi.example.com")
	if err := vm.SetUpPod(ctx, pod); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("published:", len(driver.Published()))
	_ = vm.TearDownPod(ctx, pod.UID)
	fmt.Println("after teardown:", len(driver.Published()))
	// Output:
	// registered: [csi.example.com]
	// published: 1
	// after teardown: 0
}

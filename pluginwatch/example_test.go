package pluginwatch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodekit/nodekit/pluginwatch"
	"github.com/nodekit/nodekit/pluginwatch/pluginwatchtest"
)

// A CSI driver's registrar puts its socket in the registration directory;
// one pass registers it with the handler of its type.
func Example() {
	dir, _ := os.MkdirTemp("", "pw")
	defer func() { _ = os.RemoveAll(dir) }()
	drivers := &pluginwatchtest.Handler{} // a CSI driver registry, say
	w, err := pluginwatch.New(pluginwatch.Config{Dir: dir,
		Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: drivers}})
	if err != nil {
		fmt.Println(err)
		return
	}
	plugin, _ := pluginwatchtest.Serve(filepath.Join(dir, "csi.example.com-reg.sock"),
		&registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "csi.example.com", SupportedVersions: []string{"1.0.0"}})
	defer plugin.Stop()

	_ = w.Sync(context.Background()) // Run does this every second
	for _, p := range w.Plugins() {
		fmt.Println(p.Type, p.Name, p.Versions)
	}
	fmt.Println(drivers.Log())
	// Output:
	// CSIPlugin csi.example.com [1.0.0]
	// [register csi.example.com]
}

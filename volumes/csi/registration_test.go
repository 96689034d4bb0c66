package csi_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/volumes"
	"github.com/nodekit/nodekit/volumes/csi/csitest"
)

var v1only = []string{"1.0.0"}

// serve serves drv on a new Unix socket (in a short directory: socket
// paths are limited) and returns its path.
func serve(t *testing.T, drv *csitest.Driver) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "csi.sock")
	require.NoError(t, drv.Serve(sock))
	t.Cleanup(drv.Stop)
	return sock
}

// nodeState is the Node and the CSINode as the API server has them.
func (e *env) nodeState(t *testing.T) (*v1.Node, any) {
	t.Helper()
	n, err := e.client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	cn, err := e.client.StorageV1().CSINodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	return n, cn
}

// A driver name goes into paths on the node: one that is not a DNS-1123
// subdomain of at most 63 characters is refused at validation and at
// registration, and nothing is published for it.
func TestRegistrationRefusesInvalidDriverNames(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{})
	sock := serve(t, &csitest.Driver{Name: "any", NodeID: "id-any"})
	nodeBefore, csiNodeBefore := e.nodeState(t)
	for _, name := range []string{"", ".", "..", "../../../../tmp/x", "a/b", "csi..example.com", "-csi.example.com",
		"csi_example.com", "csi.example.com/", strings.Repeat("a", 64)} {
		require.ErrorContains(t, e.drivers.ValidatePlugin(name, sock, v1only), "invalid driver name", name)
		require.ErrorContains(t, e.drivers.RegisterPlugin(ctx, name, sock, v1only), "invalid driver name", name)
	}
	require.Equal(t, []string{drvName}, e.drivers.Names())
	nodeAfter, csiNodeAfter := e.nodeState(t)
	require.Equal(t, nodeBefore, nodeAfter)
	require.Equal(t, csiNodeBefore, csiNodeAfter)

	// Upstream's rule checks the name lower-cased; 63 characters is the
	// most.
	for _, name := range []string{"CSI.Example.com", strings.Repeat("a", 63)} {
		require.NoError(t, e.drivers.RegisterPlugin(ctx, name, sock, v1only), name)
	}
}

// The endpoint a driver names is a Unix socket: a gRPC target of another
// scheme (which would send secrets and tokens over the network) is
// refused before anything is dialled.
func TestRegistrationDialsUnixSocketsOnly(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tcp := &csitest.Driver{Name: "tcp.example.com", NodeID: "id-tcp"}
	tcp.ServeListener(l)
	t.Cleanup(tcp.Stop)
	addr := l.Addr().String()
	for _, endpoint := range []string{"dns:///" + addr, addr, "passthrough:///" + addr, "tcp://" + addr, "ipv4:" + addr,
		"csi.sock", "unix://relative/csi.sock", "unix:relative.sock", "unix-abstract:csi", ""} {
		require.ErrorContains(t, e.drivers.ValidatePlugin("tcp.example.com", endpoint, v1only), "not a Unix socket", endpoint)
		require.ErrorContains(t, e.drivers.RegisterPlugin(ctx, "tcp.example.com", endpoint, v1only), "not a Unix socket", endpoint)
	}
	require.Empty(t, tcp.Calls(), "nothing dialled")
	require.Equal(t, []string{drvName}, e.drivers.Names())

	// unix:// and unix: name the same socket as its path.
	for _, endpoint := range []string{"unix://" + e.socket, "unix:" + e.socket, e.socket + "/."} {
		require.NoError(t, e.drivers.ValidatePlugin(drvName, endpoint, v1only), endpoint)
		require.NoError(t, e.drivers.RegisterPlugin(ctx, drvName, endpoint, v1only), endpoint)
		e.drivers.DeregisterPlugin(ctx, drvName, e.socket)
		require.Empty(t, e.drivers.Names(), endpoint)
	}
}

// A driver of a registered name from another socket replaces it only with
// a higher version; from the same socket it always does.
func TestReRegistration(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{}, ephemeralDriver())
	require.NoError(t, e.drivers.RegisterPlugin(ctx, drvName, e.socket, []string{"1.0.0", "1.2.0"}), "same socket, higher version")
	require.NoError(t, e.drivers.RegisterPlugin(ctx, drvName, e.socket, []string{"1.2.0"}), "same socket, same version")
	other := &csitest.Driver{Name: drvName, NodeID: "id-" + nodeName}
	sock := serve(t, other)
	for _, versions := range [][]string{{"1.2.0"}, {"1.1.0"}, {"1.0.0", "1.2.0"}} {
		require.ErrorContains(t, e.drivers.ValidatePlugin(drvName, sock, versions), "already registered", versions)
		require.ErrorContains(t, e.drivers.RegisterPlugin(ctx, drvName, sock, versions), "already registered", versions)
	}
	require.Empty(t, other.Calls(), "a refused driver is not called")

	require.NoError(t, e.drivers.ValidatePlugin(drvName, sock, []string{"1.3.0"}))
	require.NoError(t, e.drivers.RegisterPlugin(ctx, drvName, sock, []string{"1.3.0"}))
	require.ErrorContains(t, e.drivers.RegisterPlugin(ctx, drvName, e.socket, []string{"1.2.0"}), "already registered",
		"the replaced one is lower now")
	p := pod("u1", inline("scratch"))
	_, err := e.plugin.SetUp(ctx, volumes.Volume{Pod: p, Spec: &p.Spec.Volumes[0], Dir: e.dir(p, "scratch")})
	require.NoError(t, err)
	require.Len(t, other.Calls("NodePublishVolume"), 1, "the volume goes to the registered driver")
	require.Empty(t, e.driver.Calls("NodePublishVolume"))

	// The replaced driver's socket going away deregisters nothing.
	e.drivers.DeregisterPlugin(ctx, drvName, e.socket)
	require.Equal(t, []string{drvName}, e.drivers.Names())
}

// A driver's topology may add Node labels, not change one: a collision
// fails the registration with upstream's message, and the Node and the
// CSINode stay as they were.
func TestTopologyCollisionRefusesRegistration(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{Topology: map[string]string{"topology.kubernetes.io/zone": "z1"}})
	n, err := e.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	n.Labels["kubernetes.io/hostname"] = nodeName
	_, err = e.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	nodeBefore, csiNodeBefore := e.nodeState(t)

	evil := &csitest.Driver{Name: "evil.example.com", NodeID: "id-evil",
		Topology: map[string]string{"topology.kubernetes.io/zone": "z-evil", "kubernetes.io/hostname": "other-node"}}
	err = e.drivers.RegisterPlugin(ctx, evil.Name, serve(t, evil), v1only)
	require.ErrorContains(t, err, `detected topology value collision: driver reported "kubernetes.io/hostname":"other-node" `+
		`but existing label is "kubernetes.io/hostname":"node-a"`)
	nodeAfter, csiNodeAfter := e.nodeState(t)
	require.Equal(t, nodeBefore, nodeAfter, "no label, no annotation written")
	require.Equal(t, csiNodeBefore, csiNodeAfter, "no CSINode entry")
	require.Equal(t, []string{drvName}, e.drivers.Names(), "not registered")

	// The node's own values, and new keys, are fine.
	good := &csitest.Driver{Name: "good.example.com", NodeID: "id-good",
		Topology: map[string]string{"topology.kubernetes.io/zone": "z1", "kubernetes.io/hostname": nodeName, "example.com/rack": "r1"}}
	require.NoError(t, e.drivers.RegisterPlugin(ctx, good.Name, serve(t, good), v1only))
	n, err = e.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"topology.kubernetes.io/zone": "z1", "kubernetes.io/hostname": nodeName, "example.com/rack": "r1"}, n.Labels)
}

// A vol_data.json is read from the node's disk: one naming a driver whose
// name leaves the root directory is refused, not acted on: the driver is
// not called and nothing outside the root directory is removed.
func TestForgedVolDataIsNotActedOn(t *testing.T) {
	for _, via := range []string{"TearDown", "CleanupStaged"} {
		t.Run(via, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, &csitest.Driver{Stage: true})
			outside := t.TempDir()
			evilName, err := filepath.Rel(filepath.Join(e.root, "plugins", "kubernetes.io", "csi"), outside)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(evilName, "../"))
			evil := &csitest.Driver{Name: evilName, NodeID: "id-evil", Stage: true}
			_ = e.drivers.RegisterPlugin(ctx, evilName, serve(t, evil), v1only) // refused; see above

			// What the staging of volume h by that driver would have left,
			// outside the root directory.
			const handle = "h"
			staged := filepath.Join(outside, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))))
			require.NoError(t, os.MkdirAll(filepath.Join(staged, "globalmount"), 0o750))
			writeVolData(t, staged, map[string]string{"driverName": evilName, "volumeHandle": handle})

			switch via {
			case "TearDown":
				p := pod("u1")
				dir := e.dir(p, "v")
				writeVolData(t, dir, map[string]string{"specVolID": "pv", "driverName": evilName, "volumeHandle": handle,
					"nodeName": nodeName, "volumeLifecycleMode": "Persistent"})
				require.ErrorContains(t, e.plugin.TearDown(ctx, dir), "invalid driver name")
				require.FileExists(t, filepath.Join(dir, "vol_data.json"), "left for the operator")
			case "CleanupStaged":
				forged := filepath.Join(e.root, "plugins", "kubernetes.io", "csi", drvName, "forged")
				writeVolData(t, forged, map[string]string{"driverName": evilName, "volumeHandle": handle})
				require.NoError(t, e.plugin.CleanupStaged(ctx))
			}
			require.Empty(t, evil.Calls("NodeUnpublishVolume", "NodeUnstageVolume"))
			require.Empty(t, e.driver.Calls("NodeUnpublishVolume", "NodeUnstageVolume"))
			require.DirExists(t, filepath.Join(staged, "globalmount"))
			require.FileExists(t, filepath.Join(staged, "vol_data.json"))
		})
	}
}

func writeVolData(t *testing.T, dir string, data map[string]string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o750))
	b, err := json.Marshal(data)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vol_data.json"), b, 0o640))
}

// A driver that hangs in NodeGetInfo holds up only the registrations of
// its own name: pluginwatch registers each socket in its own operation,
// and another driver registers meanwhile.
func TestHungDriverDelaysOnlyItsName(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{})
	slowDrv := &csitest.Driver{Name: "slow.example.com", NodeID: "id-slow"}
	release := slowDrv.Hang("NodeGetInfo")
	defer release()
	slow := serve(t, slowDrv)
	fast := serve(t, &csitest.Driver{Name: "fast.example.com", NodeID: "id-fast"})
	done := make(chan error, 1)
	go func() { done <- e.drivers.RegisterPlugin(ctx, "slow.example.com", slow, v1only) }()
	require.Eventually(t, func() bool { return len(slowDrv.Calls("NodeGetInfo")) > 0 }, 10*time.Second, time.Millisecond)
	fastDone := make(chan error, 1)
	go func() { fastDone <- e.drivers.RegisterPlugin(ctx, "fast.example.com", fast, v1only) }()
	select {
	case err := <-fastDone:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		release()
		<-fastDone
		t.Fatal("the fast driver waited for the hung one")
	}
	require.Contains(t, e.drivers.Names(), "fast.example.com")
	release()
	require.NoError(t, <-done)
	require.Contains(t, e.drivers.Names(), "slow.example.com")
}

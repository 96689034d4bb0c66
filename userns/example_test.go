package userns_test

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/userns"
)

// A pod with hostUsers: false gets its own range; its sandbox and its
// containers carry the same user namespace, and its mounts are idmapped.
func Example() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "kubelet")
	defer os.RemoveAll(root)

	m, err := userns.New(userns.Config{
		RootDir: root,
		// Given here; zero discovers it as the kubelet does.
		Range: userns.IDRange{First: 65536, Length: 110 * 65536},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "8c5d4a2e"},
		Spec: v1.PodSpec{HostUsers: ptr.To(false),
			Containers: []v1.Container{{Name: "nginx"}}},
	}
	// From the CRI StatusResponse.
	handlers := []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}
	supported, _ := userns.HandlerSupportsUserNamespaces(handlers, "")

	ns, err := m.PodUserNamespace(ctx, pod, "", supported)
	if err != nil {
		fmt.Println(err)
		return
	}
	sandbox := &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: ns}}}}

	ctrNs, _ := m.PodUserNamespace(ctx, pod, "", supported)
	ctr := &runtimeapi.ContainerConfig{
		Mounts: []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/var/lib/kubelet/pods/8c5d4a2e/volumes/x"}},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: ctrNs}}},
	}
	userns.MapMounts(ctr.Mounts, ctrNs)

	uid := sandbox.Linux.SecurityContext.NamespaceOptions.UsernsOptions.Uids[0]
	fmt.Println("mode:", ns.Mode)
	fmt.Printf("container 0-%d -> host %d-%d\n", uid.Length-1, uid.HostId, uid.HostId+uid.Length-1)
	fmt.Println("mount idmapped from host:", ctr.Mounts[0].UidMappings[0].HostId)
	b, _ := os.ReadFile(filepath.Join(root, "pods", "8c5d4a2e", userns.MappingsFile))
	fmt.Println(string(b))

	// The pod terminated.
	_ = m.Release(ctx, pod.UID)
	_, held := m.Allocation(pod.UID)
	fmt.Println("held after release:", held)

	// A pod without hostUsers: false shares the host's namespace.
	hostNs, _ := m.PodUserNamespace(ctx, &v1.Pod{}, "", false)
	fmt.Println("default pod mode:", hostNs.Mode)

	// A runtime without support fails the sandbox with the kubelet's text.
	_, err = m.PodUserNamespace(ctx, pod, "runc", false)
	fmt.Println(err)
	// Output:
	// mode: POD
	// container 0-65535 -> host 65536-131071
	// mount idmapped from host: 65536
	// {"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}
	// held after release: false
	// default pod mode: NODE
	// can't set `spec.hostUsers: false`, RuntimeClass handler "runc" does not support user namespaces
}

// Discovering the pods' ID range as the kubelet does: from the "kubelet"
// user's subordinate IDs, here in files of the example's own.
func ExampleKubeletMappings() {
	dir, _ := os.MkdirTemp("", "subids")
	defer os.RemoveAll(dir)
	line := []byte("kubelet:65536:7208960\n")
	_ = os.WriteFile(filepath.Join(dir, "subuid"), line, 0o644)
	_ = os.WriteFile(filepath.Join(dir, "subgid"), line, 0o644)

	r, err := userns.KubeletMappings(context.Background(), userns.DefaultIDsPerPod, userns.SubIDs{
		SubUIDFile: filepath.Join(dir, "subuid"),
		SubGIDFile: filepath.Join(dir, "subgid"),
		// A node with a "kubelet" user.
		LookupUser:  func(name string) (*user.User, error) { return &user.User{Username: name, Uid: "990"}, nil },
		LookupGroup: func(name string) (*user.Group, error) { return nil, user.UnknownGroupError(name) },
	})
	fmt.Println(r, err)
	fmt.Println("pods:", r.Length/userns.DefaultIDsPerPod)

	// No such user: every ID from 65536 up.
	r, err = userns.KubeletMappings(context.Background(), 0, userns.SubIDs{
		LookupUser: func(name string) (*user.User, error) { return nil, user.UnknownUserError(name) },
	})
	fmt.Println(r, err)
	// Output:
	// {65536 7208960} <nil>
	// pods: 110
	// {65536 4294901760} <nil>
}

// Housekeeping frees the ranges of pods that are gone.
func ExampleManager_CleanupOrphans() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "kubelet")
	defer os.RemoveAll(root)
	m, _ := userns.New(userns.Config{RootDir: root, Range: userns.IDRange{First: 65536, Length: 110 * 65536}})

	for _, uid := range []types.UID{"running", "deleted"} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Spec: v1.PodSpec{HostUsers: ptr.To(false)}}
		_, _ = m.PodUserNamespace(ctx, pod, "", true)
	}
	known := map[types.UID]bool{"running": true}
	err := m.CleanupOrphans(ctx, func(uid types.UID) bool { return known[uid] })

	_, running := m.Allocation("running")
	_, deleted := m.Allocation("deleted")
	fmt.Println(err, running, deleted)
	// Output:
	// <nil> true false
}

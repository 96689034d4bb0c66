package nodestatus

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

// richStatus sets every field of a NodeStatus but the conditions.
func richStatus() *v1.NodeStatus {
	return &v1.NodeStatus{
		Capacity:        v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("4Gi")},
		Allocatable:     v1.ResourceList{v1.ResourceCPU: q("1900m"), v1.ResourceMemory: q("3Gi")},
		Phase:           v1.NodeRunning,
		Addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: "n1"}},
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10250}},
		NodeInfo: v1.NodeSystemInfo{MachineID: "m", SystemUUID: "s", BootID: "b", KernelVersion: "6.1", OSImage: "Debian",
			ContainerRuntimeVersion: "containerd://2.2", KubeletVersion: "v1.36.3", OperatingSystem: "linux", Architecture: "amd64",
			Swap: &v1.NodeSwapStatus{Capacity: ptr.To[int64](1 << 30)}},
		Images:           []v1.ContainerImage{{Names: []string{"a:1", "a@sha256:1"}, SizeBytes: 100}, {Names: []string{"b:2"}, SizeBytes: 200}},
		VolumesInUse:     []v1.UniqueVolumeName{"kubernetes.io/csi/x^v1"},
		VolumesAttached:  []v1.AttachedVolume{{Name: "kubernetes.io/csi/x^v1", DevicePath: "/dev/x"}},
		Config:           &v1.NodeConfigStatus{Error: ""},
		RuntimeHandlers:  []v1.NodeRuntimeHandler{{Name: "runc", Features: &v1.NodeRuntimeHandlerFeatures{UserNamespaces: ptr.To(true)}}},
		Features:         &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(true)},
		DeclaredFeatures: []string{"A", "B"},
	}
}

// TestStatusEqual changes each field of a status in turn: statusEqual
// must tell every change, agree with equality.Semantic on each case, and
// see through fresh copies (decoded statuses share no pointers).
func TestStatusEqual(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*v1.NodeStatus)
		equal  bool
	}{
		"copy":                {func(*v1.NodeStatus) {}, true},
		"same quantity":       {func(s *v1.NodeStatus) { s.Capacity[v1.ResourceMemory] = q("4096Mi") }, true},
		"capacity":            {func(s *v1.NodeStatus) { s.Capacity[v1.ResourceCPU] = q("3") }, false},
		"capacity key":        {func(s *v1.NodeStatus) { delete(s.Capacity, v1.ResourceCPU); s.Capacity["x"] = q("2") }, false},
		"allocatable missing": {func(s *v1.NodeStatus) { delete(s.Allocatable, v1.ResourceMemory) }, false},
		"empty map as nil":    {func(s *v1.NodeStatus) { s.Capacity = nil }, false},
		"phase":               {func(s *v1.NodeStatus) { s.Phase = v1.NodePending }, false},
		"address":             {func(s *v1.NodeStatus) { s.Addresses[1].Address = "n2" }, false},
		"address order":       {func(s *v1.NodeStatus) { s.Addresses[0], s.Addresses[1] = s.Addresses[1], s.Addresses[0] }, false},
		"port":                {func(s *v1.NodeStatus) { s.DaemonEndpoints.KubeletEndpoint.Port = 10251 }, false},
		"boot id":             {func(s *v1.NodeStatus) { s.NodeInfo.BootID = "c" }, false},
		"swap":                {func(s *v1.NodeStatus) { s.NodeInfo.Swap.Capacity = ptr.To[int64](0) }, false},
		"swap gone":           {func(s *v1.NodeStatus) { s.NodeInfo.Swap = nil }, false},
		"image name":          {func(s *v1.NodeStatus) { s.Images[0].Names[1] = "a@sha256:2" }, false},
		"image size":          {func(s *v1.NodeStatus) { s.Images[1].SizeBytes = 201 }, false},
		"image gone":          {func(s *v1.NodeStatus) { s.Images = s.Images[:1] }, false},
		"volume in use":       {func(s *v1.NodeStatus) { s.VolumesInUse = nil }, false},
		"volume attached":     {func(s *v1.NodeStatus) { s.VolumesAttached[0].DevicePath = "/dev/y" }, false},
		"config":              {func(s *v1.NodeStatus) { s.Config.Error = "bad" }, false},
		"config gone":         {func(s *v1.NodeStatus) { s.Config = nil }, false},
		"handler":             {func(s *v1.NodeStatus) { s.RuntimeHandlers[0].Name = "crun" }, false},
		"handler feature":     {func(s *v1.NodeStatus) { s.RuntimeHandlers[0].Features.UserNamespaces = ptr.To(false) }, false},
		"features":            {func(s *v1.NodeStatus) { s.Features.SupplementalGroupsPolicy = nil }, false},
		"declared features":   {func(s *v1.NodeStatus) { s.DeclaredFeatures = append(s.DeclaredFeatures, "C") }, false},
		"conditions not here": {func(s *v1.NodeStatus) { s.Conditions = []v1.NodeCondition{{Type: "X"}} }, true},
		"empty list as nil":   {func(s *v1.NodeStatus) { s.DeclaredFeatures = []string{} }, false},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := richStatus(), richStatus()
			tc.mutate(b)
			require.Equal(t, tc.equal, statusEqual(a, b))
			require.Equal(t, tc.equal, statusEqual(b, a))
			a.Conditions, b.Conditions = nil, nil
			require.Equal(t, equality.Semantic.DeepEqual(a, b), statusEqual(a, b), "agrees with equality.Semantic")
		})
	}
	require.True(t, statusEqual(&v1.NodeStatus{Images: []v1.ContainerImage{}}, &v1.NodeStatus{}), "an empty list equals a missing one")
	require.True(t, statusEqual(&v1.NodeStatus{Capacity: v1.ResourceList{}}, &v1.NodeStatus{}), "an empty map equals a missing one")
}

// TestStatusEqualKnowsEveryField fails when the API adds a field to
// NodeStatus or NodeSystemInfo: statusEqual must then learn to compare it.
func TestStatusEqualKnowsEveryField(t *testing.T) {
	var fields []string
	st := reflect.TypeOf(v1.NodeStatus{})
	for i := range st.NumField() {
		fields = append(fields, st.Field(i).Name)
	}
	require.Equal(t, []string{"Capacity", "Allocatable", "Phase", "Conditions", "Addresses", "DaemonEndpoints", "NodeInfo",
		"Images", "VolumesInUse", "VolumesAttached", "Config", "RuntimeHandlers", "Features", "DeclaredFeatures"}, fields,
		"NodeStatus changed: update statusEqual")
	info := reflect.TypeOf(v1.NodeSystemInfo{})
	for i := range info.NumField() {
		f := info.Field(i)
		require.True(t, f.Type.Kind() == reflect.String || f.Name == "Swap", "NodeSystemInfo.%s is not a string: update systemInfoEqual", f.Name)
	}
}

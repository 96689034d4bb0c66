package podsyncer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func TestContainerResources(t *testing.T) {
	c := &v1.Container{Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("2Gi")},
	}}
	r := containerResources(&v1.Pod{}, c, v1.PodQOSBurstable, 4<<30)
	assert.Equal(t, &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuPeriod: 100000, CpuQuota: 50000,
		MemoryLimitInBytes: 2 << 30, OomScoreAdj: 750}, r)

	best := containerResources(&v1.Pod{}, &v1.Container{}, v1.PodQOSBestEffort, 4<<30)
	assert.Equal(t, int64(2), best.CpuShares, "minimum shares")
	assert.Equal(t, int64(1000), best.OomScoreAdj)
	assert.Zero(t, best.CpuQuota)

	tiny := containerResources(&v1.Pod{}, &v1.Container{Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1m")}}},
		v1.PodQOSGuaranteed, 4<<30)
	assert.Equal(t, int64(1000), tiny.CpuQuota, "minimum quota")
	assert.Equal(t, int64(2), tiny.CpuShares)
	assert.Equal(t, int64(-997), tiny.OomScoreAdj)

	huge := containerResources(&v1.Pod{}, &v1.Container{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Gi")}}},
		v1.PodQOSBurstable, 4<<30)
	assert.Equal(t, int64(3), huge.OomScoreAdj, "clamped above guaranteed")
}

func TestContainerSecurity(t *testing.T) {
	s := &Syncer{maskedPaths: func() []string { return []string{"/proc/kcore"} }, seccompRoot: "/var/lib/kubelet/seccomp"}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{
		HostPID: true,
		SecurityContext: &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000),
			FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{4000},
			SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("audit.json")}},
	}}
	c := &v1.Container{Name: "c", SecurityContext: &v1.SecurityContext{RunAsUser: ptr.To[int64](1001),
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}}}}
	sc := s.containerSecurity(pod, c)
	assert.Equal(t, int64(1001), sc.RunAsUser.Value, "the container's user wins")
	assert.Equal(t, int64(3000), sc.RunAsGroup.Value, "the pod's group fills in")
	assert.Equal(t, []int64{4000, 2000}, sc.SupplementalGroups)
	assert.True(t, sc.NoNewPrivs)
	assert.True(t, sc.ReadonlyRootfs)
	assert.False(t, sc.Privileged)
	assert.Equal(t, &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}}, sc.Capabilities)
	assert.Equal(t, []string{"/proc/kcore"}, sc.MaskedPaths)
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, sc.NamespaceOptions.Pid)
	assert.Equal(t, &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
		LocalhostRef: "/var/lib/kubelet/seccomp/audit.json"}, sc.Seccomp)

	c.SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true), ProcMount: ptr.To(v1.UnmaskedProcMount)}
	pod.Spec.Containers = []v1.Container{*c}
	sc = s.containerSecurity(pod, c)
	assert.Empty(t, sc.MaskedPaths)
	assert.True(t, s.sandboxSecurity(pod).Privileged, "a privileged container makes a privileged sandbox")
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}}}
	c := &v1.Container{Name: "c"}
	assert.EqualError(t, verifyRunAsNonRoot(pod, c, nil, ""), `container has runAsNonRoot and image will run as root (pod: "p_ns(u)", container: c)`)
	assert.EqualError(t, verifyRunAsNonRoot(pod, c, ptr.To[int64](0), ""), `container has runAsNonRoot and image will run as root (pod: "p_ns(u)", container: c)`)
	assert.NoError(t, verifyRunAsNonRoot(pod, c, ptr.To[int64](1234), ""))
	assert.EqualError(t, verifyRunAsNonRoot(pod, c, nil, "nobody"),
		`container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: "p_ns(u)", container: c)`)
	c.SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To[int64](0)}
	assert.EqualError(t, verifyRunAsNonRoot(pod, c, nil, ""), `container's runAsUser breaks non-root policy (pod: "p_ns(u)", container: c)`)
}

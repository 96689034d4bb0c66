package kubeletconfig

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// Upstream's defaults of v1.36 that other packages also need.
const (
	DefaultPodLogsDir               = "/var/log/pods"
	DefaultContainerRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	DefaultVolumePluginDir          = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"
	DefaultResolvConf               = "/etc/resolv.conf"
	DefaultMaxPods                  = 110
	DefaultKubeletPort              = 10250
	DefaultHealthzPort              = 10248
	// kubeletOOMScoreAdj is the kubelet process's own oom_score_adj.
	kubeletOOMScoreAdj = -999
)

// SetDefaults fills in every field left unset with the value the v1.36
// kubelet gives it, as the KubeletConfiguration's defaulting does (the
// feature-gated defaults follow the file's featureGates over the v1.36
// gate defaults).
func SetDefaults(c *kubeletv1beta1.KubeletConfiguration) {
	dur := func(d *metav1.Duration, v time.Duration) {
		if d.Duration == 0 {
			d.Duration = v
		}
	}
	str := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	i32 := func(p **int32, v int32) {
		if *p == nil {
			*p = ptr.To(v)
		}
	}
	boolean := func(p **bool, v bool) {
		if *p == nil {
			*p = ptr.To(v)
		}
	}
	boolean(&c.EnableServer, true)
	dur(&c.SyncFrequency, time.Minute)
	dur(&c.FileCheckFrequency, 20*time.Second)
	dur(&c.HTTPCheckFrequency, 20*time.Second)
	str(&c.Address, "0.0.0.0")
	if c.Port == 0 {
		c.Port = DefaultKubeletPort
	}
	boolean(&c.Authentication.Anonymous.Enabled, false)
	boolean(&c.Authentication.Webhook.Enabled, true)
	dur(&c.Authentication.Webhook.CacheTTL, 2*time.Minute)
	if c.Authorization.Mode == "" {
		c.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeWebhook
	}
	dur(&c.Authorization.Webhook.CacheAuthorizedTTL, 5*time.Minute)
	dur(&c.Authorization.Webhook.CacheUnauthorizedTTL, 30*time.Second)
	i32(&c.RegistryPullQPS, 5)
	if c.RegistryBurst == 0 {
		c.RegistryBurst = 10
	}
	i32(&c.EventRecordQPS, 50)
	if c.EventBurst == 0 {
		c.EventBurst = 100
	}
	boolean(&c.EnableDebuggingHandlers, true)
	i32(&c.HealthzPort, DefaultHealthzPort)
	str(&c.HealthzBindAddress, "127.0.0.1")
	i32(&c.OOMScoreAdj, kubeletOOMScoreAdj)
	dur(&c.StreamingConnectionIdleTimeout, 4*time.Hour)
	if c.NodeStatusReportFrequency.Duration == 0 {
		c.NodeStatusReportFrequency = c.NodeStatusUpdateFrequency
		dur(&c.NodeStatusReportFrequency, 5*time.Minute)
	}
	dur(&c.NodeStatusUpdateFrequency, 10*time.Second)
	if c.NodeLeaseDurationSeconds == 0 {
		c.NodeLeaseDurationSeconds = 40
	}
	dur(&c.ImageMinimumGCAge, 2*time.Minute)
	i32(&c.ImageGCHighThresholdPercent, 85)
	i32(&c.ImageGCLowThresholdPercent, 80)
	dur(&c.VolumeStatsAggPeriod, time.Minute)
	boolean(&c.CgroupsPerQOS, true)
	str(&c.CgroupDriver, "cgroupfs")
	str(&c.CPUManagerPolicy, "none")
	dur(&c.CPUManagerReconcilePeriod, 10*time.Second)
	str(&c.MemoryManagerPolicy, kubeletv1beta1.NoneMemoryManagerPolicy)
	str(&c.TopologyManagerPolicy, kubeletv1beta1.NoneTopologyManagerPolicy)
	str(&c.TopologyManagerScope, kubeletv1beta1.ContainerTopologyManagerScope)
	dur(&c.RuntimeRequestTimeout, 2*time.Minute)
	str(&c.HairpinMode, kubeletv1beta1.PromiscuousBridge)
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.PodPidsLimit == nil || *c.PodPidsLimit < 0 {
		c.PodPidsLimit = ptr.To[int64](-1)
	}
	if c.ResolverConfig == nil {
		c.ResolverConfig = ptr.To(DefaultResolvConf)
	}
	boolean(&c.CPUCFSQuota, true)
	if c.CPUCFSQuotaPeriod == nil {
		c.CPUCFSQuotaPeriod = &metav1.Duration{Duration: 100 * time.Millisecond}
	}
	i32(&c.NodeStatusMaxImages, 50)
	if c.MaxOpenFiles == 0 {
		c.MaxOpenFiles = 1000000
	}
	str(&c.ContentType, "application/vnd.kubernetes.protobuf")
	i32(&c.KubeAPIQPS, 50)
	if c.KubeAPIBurst == 0 {
		c.KubeAPIBurst = 100
	}
	if c.SerializeImagePulls == nil {
		c.SerializeImagePulls = ptr.To(c.MaxParallelImagePulls == nil || *c.MaxParallelImagePulls < 2)
	}
	dur(&c.EvictionPressureTransitionPeriod, 5*time.Minute)
	boolean(&c.MergeDefaultEvictionSettings, false)
	boolean(&c.EnableControllerAttachDetach, true)
	boolean(&c.MakeIPTablesUtilChains, true)
	i32(&c.IPTablesMasqueradeBit, 14)
	i32(&c.IPTablesDropBit, 15)
	boolean(&c.FailSwapOn, true)
	str(&c.ContainerLogMaxSize, "10Mi")
	i32(&c.ContainerLogMaxFiles, 5)
	i32(&c.ContainerLogMaxWorkers, 1)
	if c.ContainerLogMonitorInterval == nil {
		c.ContainerLogMonitorInterval = &metav1.Duration{Duration: 10 * time.Second}
	}
	if c.ConfigMapAndSecretChangeDetectionStrategy == "" {
		c.ConfigMapAndSecretChangeDetectionStrategy = kubeletv1beta1.WatchChangeDetectionStrategy
	}
	if c.EnforceNodeAllocatable == nil {
		c.EnforceNodeAllocatable = []string{"pods"}
	}
	str(&c.VolumePluginDir, DefaultVolumePluginDir)
	logsapi.SetRecommendedLoggingConfiguration(&c.Logging)
	boolean(&c.EnableSystemLogHandler, true)
	boolean(&c.EnableProfilingHandler, true)
	boolean(&c.EnableDebugFlagsHandler, true)
	boolean(&c.SeccompDefault, false)
	boolean(&c.FailCgroupV1, true)
	if c.MemoryThrottlingFactor == nil {
		c.MemoryThrottlingFactor = ptr.To(0.9)
	}
	if c.MemoryReservationPolicy == "" {
		c.MemoryReservationPolicy = kubeletv1beta1.NoneMemoryReservationPolicy
	}
	boolean(&c.RegisterNode, true)
	boolean(&c.LocalStorageCapacityIsolation, true)
	str(&c.ContainerRuntimeEndpoint, DefaultContainerRuntimeEndpoint)
	str(&c.PodLogsDir, DefaultPodLogsDir)
	// Beta and on by default in v1.36.
	if gate(c, "KubeletCrashLoopBackOffMax", true) && c.CrashLoopBackOff.MaxContainerRestartPeriod == nil {
		c.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: 300 * time.Second}
	}
	if gate(c, "KubeletEnsureSecretPulledImages", true) && c.ImagePullCredentialsVerificationPolicy == "" {
		c.ImagePullCredentialsVerificationPolicy = kubeletv1beta1.NeverVerifyPreloadedImages
	}
}

// gate is the file's setting of a feature gate, else its v1.36 default.
func gate(c *kubeletv1beta1.KubeletConfiguration, name string, def bool) bool {
	if v, ok := c.FeatureGates[name]; ok {
		return v
	}
	return def
}

package syncloop

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The API defaults a static pod gets, the subset of upstream's v1 defaulting
// (SetObjectDefaults_Pod) that matters to a node agent.
const (
	defaultTerminationGracePeriod = int64(30)
	defaultTerminationMessagePath = "/dev/termination-log"
	defaultSchedulerName          = "default-scheduler"
)

// defaultPod applies the v1 API defaults the kubelet gets from decoding a
// manifest with the API scheme.
func defaultPod(pod *v1.Pod) {
	s := &pod.Spec
	if s.RestartPolicy == "" {
		s.RestartPolicy = v1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = v1.DNSClusterFirst
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := defaultTerminationGracePeriod
		s.TerminationGracePeriodSeconds = &g
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &v1.PodSecurityContext{}
	}
	if s.SchedulerName == "" {
		s.SchedulerName = defaultSchedulerName
	}
	if s.EnableServiceLinks == nil {
		t := true
		s.EnableServiceLinks = &t
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i], s.HostNetwork)
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i], s.HostNetwork)
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
}

func defaultContainer(c *v1.Container, hostNetwork bool) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = defaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	for i := range c.Env {
		if f := c.Env[i].ValueFrom; f != nil && f.FieldRef != nil && f.FieldRef.APIVersion == "" {
			f.FieldRef.APIVersion = "v1"
		}
	}
	// Requests default to limits, like the API server's defaulting.
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = v1.ResourceList{}
			}
			c.Resources.Requests[name] = q.DeepCopy()
		}
	}
}

// defaultPullPolicy is Always for an image without a tag or tagged
// "latest" (and without a digest), IfNotPresent otherwise.
func defaultPullPolicy(image string) v1.PullPolicy {
	if strings.Contains(image, "@") {
		return v1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(name, ":")
	if i < 0 || name[i+1:] == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

func defaultProbe(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if g := p.HTTPGet; g != nil {
		if g.Path == "" {
			g.Path = "/"
		}
		if g.Scheme == "" {
			g.Scheme = v1.URISchemeHTTP
		}
	}
}

func defaultVolume(v *v1.Volume) {
	if v.VolumeSource == (v1.VolumeSource{}) {
		v.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	if v.HostPath != nil && v.HostPath.Type == nil {
		t := v1.HostPathUnset
		v.HostPath.Type = &t
	}
	if v.DownwardAPI != nil && v.DownwardAPI.DefaultMode == nil {
		m := v1.DownwardAPIVolumeSourceDefaultMode
		v.DownwardAPI.DefaultMode = &m
	}
	if v.Projected != nil && v.Projected.DefaultMode == nil {
		m := v1.ProjectedVolumeSourceDefaultMode
		v.Projected.DefaultMode = &m
	}
}

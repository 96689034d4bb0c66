package userns

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UsesUserNamespace says whether the pod asks for its own user namespace
// (spec.hostUsers: false). Unset means true: the host's.
func UsesUserNamespace(pod *v1.Pod) bool {
	return pod != nil && pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// ValidatePod returns what API validation forbids a pod with hostUsers:
// false (nothing for other pods), with its field paths and messages: the
// host's PID and IPC namespaces, the host's network unless
// allowHostNetwork (the UserNamespacesHostNetworkSupport gate), and
// volumeDevices in any container. Procmount and volume types are not
// restricted any more (idmapped mounts made every volume type usable).
//
// The kubelet itself does not check these: the API server validates
// pods, and the kubelet validates static pods as it reads them. This
// package checks them again in PodUserNamespace, for hosts whose pod
// sources skip validation.
func ValidatePod(pod *v1.Pod, allowHostNetwork bool) field.ErrorList {
	if !UsesUserNamespace(pod) {
		return nil
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if !allowHostNetwork && pod.Spec.HostNetwork {
		errs = append(errs, field.Forbidden(spec.Child("hostNetwork"), "when `hostUsers` is false"))
	}
	// API validation spells these two field names with capitals.
	if pod.Spec.HostPID {
		errs = append(errs, field.Forbidden(spec.Child("HostPID"), "when `hostUsers` is false"))
	}
	if pod.Spec.HostIPC {
		errs = append(errs, field.Forbidden(spec.Child("HostIPC"), "when `hostUsers` is false"))
	}
	// volumeDevices support neither idmapped mounts nor chown.
	check := func(path *field.Path, cs []v1.Container) {
		for i := range cs {
			if len(cs[i].VolumeDevices) > 0 {
				errs = append(errs, field.Forbidden(path.Index(i).Child("volumeDevices"), "when `hostUsers` is false"))
			}
		}
	}
	check(spec.Child("initContainers"), pod.Spec.InitContainers)
	check(spec.Child("containers"), pod.Spec.Containers)
	for i := range pod.Spec.EphemeralContainers {
		if len(pod.Spec.EphemeralContainers[i].VolumeDevices) > 0 {
			errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers").Index(i).Child("volumeDevices"),
				"when `hostUsers` is false"))
		}
	}
	return errs
}

// HandlerSupportsUserNamespaces says whether the CRI runtime handler of
// that name ("" the default) supports user namespaces, from the
// RuntimeHandlers of the runtime's StatusResponse (each handler's
// features.user_namespaces), as the kubelet decides it: an empty list
// (a runtime too old to report handlers) supports none; a name the
// runtime does not list is an error.
func HandlerSupportsUserNamespaces(handlers []*runtimeapi.RuntimeHandler, name string) (bool, error) {
	if len(handlers) == 0 {
		return false, nil
	}
	for _, h := range handlers {
		if h.GetName() == name {
			return h.GetFeatures().GetUserNamespaces(), nil
		}
	}
	return false, fmt.Errorf("the handler %q is not known", name)
}

// MapMounts sets every mount's uid and gid mappings to the pod's user
// namespace, as the kubelet does for each container it creates (the
// runtime then makes idmapped mounts). ns is what PodUserNamespace
// returned; nil leaves the mounts alone, and the host's namespace (mode
// NODE, no mappings) clears them.
func MapMounts(mounts []*runtimeapi.Mount, ns *runtimeapi.UserNamespace) {
	if ns == nil {
		return
	}
	for _, m := range mounts {
		m.UidMappings = ns.GetUids()
		m.GidMappings = ns.GetGids()
	}
}

package syncloop

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateStaticPod checks the essentials of a defaulted static pod: valid
// name and namespace, at least one container, unique valid container names,
// an image for each, known restart and DNS policies, valid ports, and no
// reference to API objects (static pods may not use them, as upstream's
// PreventStaticPodAPIReferences).
func validateStaticPod(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
		errs = append(errs, field.Invalid(meta.Child("name"), pod.Name, msg))
	}
	for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), pod.Namespace, msg))
	}
	spec := field.NewPath("spec")
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "at least one container is required"))
	}
	names := sets.New[string]()
	errs = append(errs, validateContainers(pod.Spec.InitContainers, spec.Child("initContainers"), names)...)
	errs = append(errs, validateContainers(pod.Spec.Containers, spec.Child("containers"), names)...)
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), pod.Spec.RestartPolicy,
			[]v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}))
	}
	switch pod.Spec.DNSPolicy {
	case v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, v1.DNSDefault, v1.DNSNone:
	default:
		errs = append(errs, field.NotSupported(spec.Child("dnsPolicy"), pod.Spec.DNSPolicy,
			[]v1.DNSPolicy{v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, v1.DNSDefault, v1.DNSNone}))
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(spec.Child("terminationGracePeriodSeconds"), *g, "must be non-negative"))
	}
	return append(errs, apiReferences(pod)...)
}

func validateContainers(cs []v1.Container, path *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		p := path.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
		for j, port := range c.Ports {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("ports").Index(j).Child("containerPort"), port.ContainerPort, msg))
			}
		}
		for j, e := range c.Env {
			if f := e.ValueFrom; f != nil && (f.SecretKeyRef != nil || f.ConfigMapKeyRef != nil) {
				errs = append(errs, forbiddenRef(p.Child("env").Index(j).Child("valueFrom"), "secrets or configmaps"))
			}
		}
		if len(c.EnvFrom) > 0 {
			errs = append(errs, forbiddenRef(p.Child("envFrom"), "secrets or configmaps"))
		}
	}
	return errs
}

// apiReferences lists the pod's references to API objects.
func apiReferences(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if pod.Spec.ServiceAccountName != "" {
		errs = append(errs, forbiddenRef(spec.Child("serviceAccountName"), "serviceaccounts"))
	}
	if len(pod.Spec.ImagePullSecrets) > 0 {
		errs = append(errs, forbiddenRef(spec.Child("imagePullSecrets"), "secrets"))
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		errs = append(errs, forbiddenRef(spec.Child("resourceClaims"), "resourceclaims"))
	}
	for i, v := range pod.Spec.Volumes {
		p := spec.Child("volumes").Index(i)
		switch {
		case v.ConfigMap != nil:
			errs = append(errs, forbiddenRef(p.Child("configMap"), "configmaps"))
		case v.Secret != nil:
			errs = append(errs, forbiddenRef(p.Child("secret"), "secrets"))
		case v.PersistentVolumeClaim != nil:
			errs = append(errs, forbiddenRef(p.Child("persistentVolumeClaim"), "persistentvolumeclaims"))
		case v.Ephemeral != nil:
			errs = append(errs, forbiddenRef(p.Child("ephemeral"), "persistentvolumeclaims"))
		case v.CSI != nil:
			errs = append(errs, forbiddenRef(p.Child("csi"), "csidrivers"))
		case v.Projected != nil:
			for j, s := range v.Projected.Sources {
				if s.DownwardAPI == nil {
					errs = append(errs, forbiddenRef(p.Child("projected", "sources").Index(j), "API objects"))
				}
			}
		}
	}
	return errs
}

func forbiddenRef(p *field.Path, what string) *field.Error {
	return field.Forbidden(p, "static pods may not reference "+what)
}

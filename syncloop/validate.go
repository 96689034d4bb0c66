package syncloop

import (
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
	if msg := unsafeUID(pod.UID); msg != "" {
		errs = append(errs, field.Invalid(meta.Child("uid"), pod.UID, msg))
	}
	spec := field.NewPath("spec")
	volumes, volErrs := validateVolumeNames(pod.Spec.Volumes, spec.Child("volumes"))
	errs = append(errs, volErrs...)
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "at least one container is required"))
	}
	names := sets.New[string]()
	errs = append(errs, validateContainers(pod.Spec.InitContainers, spec.Child("initContainers"), names, volumes)...)
	errs = append(errs, validateContainers(pod.Spec.Containers, spec.Child("containers"), names, volumes)...)
	if len(pod.Spec.EphemeralContainers) > 0 {
		// As upstream's ValidatePodCreate: they are added through the
		// API's ephemeralcontainers subresource, never created with a pod.
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "cannot be set on create"))
	}
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

// unsafeUID says why a UID given in a manifest cannot name the pod's
// directories (upstream keeps a given UID verbatim; nodekit refuses one
// that could leave them), or "".
func unsafeUID(uid types.UID) string {
	s := string(uid)
	switch {
	case s == "":
		return ""
	case len(s) > 128:
		return "must be no more than 128 characters"
	case strings.ContainsAny(s, `/\`) || strings.ContainsRune(s, 0):
		return "must not contain a path separator or NUL"
	case strings.Contains(s, ".."), s == ".":
		return `must not be "." or contain ".."`
	}
	return ""
}

// validateVolumeNames checks that every volume has a unique DNS-1123
// label for a name (it names a directory under the pod's) and returns
// the names.
func validateVolumeNames(vols []v1.Volume, path *field.Path) (sets.Set[string], field.ErrorList) {
	names := sets.New[string]()
	var errs field.ErrorList
	for i, v := range vols {
		errs = append(errs, validateName(v.Name, path.Index(i).Child("name"), names)...)
	}
	return names, errs
}

// validateName checks a container or volume name: required, a DNS-1123
// label, unique among names (which it joins).
func validateName(name string, path *field.Path, names sets.Set[string]) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if names.Has(name) {
		errs = append(errs, field.Duplicate(path, name))
	}
	names.Insert(name)
	return errs
}

// validateMounts checks that each mount names a volume of the pod, has a
// path, and that its subPath stays below the volume.
func validateMounts(mounts []v1.VolumeMount, path *field.Path, volumes sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i, m := range mounts {
		p := path.Index(i)
		if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if m.SubPath != "" {
			if msg := descendingPath(m.SubPath); msg != "" {
				errs = append(errs, field.Invalid(p.Child("subPath"), m.SubPath, msg))
			}
		}
	}
	return errs
}

// descendingPath says why p is not a relative path that stays below its
// base, or "".
func descendingPath(p string) string {
	if filepath.IsAbs(p) || strings.HasPrefix(p, `\`) {
		return "must be a relative path"
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "must not contain '..'"
		}
	}
	return ""
}

func validateContainers(cs []v1.Container, path *field.Path, names, volumes sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		p := path.Index(i)
		errs = append(errs, validateName(c.Name, p.Child("name"), names)...)
		errs = append(errs, validateMounts(c.VolumeMounts, p.Child("volumeMounts"), volumes)...)
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

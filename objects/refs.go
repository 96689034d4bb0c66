package objects

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// References returns the names of the configMaps and secrets pod uses, each
// once, sorted: volumes (projected sources too), env valueFrom and envFrom
// of every container (init and ephemeral too), and image pull secrets.
func References(pod *v1.Pod) (configMaps, secrets []string) {
	for _, s := range pod.Spec.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.ConfigMap != nil:
			configMaps = append(configMaps, v.ConfigMap.Name)
		case v.Secret != nil:
			secrets = append(secrets, v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					configMaps = append(configMaps, s.ConfigMap.Name)
				}
				if s.Secret != nil {
					secrets = append(secrets, s.Secret.Name)
				}
			}
		}
	}
	visit := func(c *v1.Container) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				configMaps = append(configMaps, e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				secrets = append(secrets, e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				configMaps = append(configMaps, r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				secrets = append(secrets, r.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		visit((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return uniq(configMaps), uniq(secrets)
}

func uniq(s []string) []string {
	s = slices.DeleteFunc(s, func(n string) bool { return n == "" })
	slices.Sort(s)
	return slices.Compact(s)
}

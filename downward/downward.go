package downward

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FormatMap renders labels or annotations as the kubelet writes them to a
// downward API file: one key="value" line per entry (value Go-quoted), keys
// sorted, no trailing newline.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b []byte
	for i, k := range keys {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendQuote(b, m[k])
	}
	return string(b)
}

// splitSubscript splits "metadata.labels['key']" into the path and key.
func splitSubscript(path string) (string, string, bool) {
	open := strings.Index(path, "['")
	if open < 0 || !strings.HasSuffix(path, "']") || open+2 > len(path)-2 {
		return path, "", false
	}
	return path[:open], path[open+2 : len(path)-2], true
}

// PodField returns the value of a pod fieldRef path that a volume file may
// carry: metadata.name, metadata.namespace, metadata.uid, metadata.labels,
// metadata.annotations (whole or one key with ['key']).
func PodField(pod *v1.Pod, path string) (string, error) {
	if p, key, ok := splitSubscript(path); ok {
		switch p {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", path, strings.Join(errs, ";"))
			}
			return pod.Annotations[key], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", path, strings.Join(errs, ";"))
			}
			return pod.Labels[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript", path)
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// findContainer returns the named regular or init container.
func findContainer(pod *v1.Pod, name string) (*v1.Container, error) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], nil
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], nil
		}
	}
	return nil, fmt.Errorf("container %s not found", name)
}

// ContainerResource returns the value of a resourceFieldRef for the named
// container of pod. A limit the container does not set (or sets to zero)
// reads as the pod-level limit if the pod sets one, else the node's
// allocatable amount, as on the kubelet. Values are rounded up to whole
// divisors (default divisor 1).
func ContainerResource(ref *v1.ResourceFieldSelector, pod *v1.Pod, container string, allocatable v1.ResourceList) (string, error) {
	c, err := findContainer(pod, container)
	if err != nil {
		return "", err
	}
	if pod.Spec.Resources != nil && len(pod.Spec.Resources.Limits) > 0 {
		allocatable = allocatable.DeepCopy()
		if allocatable == nil {
			allocatable = v1.ResourceList{}
		}
		for name, q := range pod.Spec.Resources.Limits {
			allocatable[name] = q
		}
	}
	limits := c.Resources.Limits.DeepCopy()
	if limits == nil {
		limits = v1.ResourceList{}
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := limits[name]; !ok || q.IsZero() {
			if a, ok := allocatable[name]; ok {
				limits[name] = a.DeepCopy()
			}
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	list := limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q := list[v1.ResourceName(name)]
	switch {
	case name == string(v1.ResourceCPU):
		return strconv.FormatInt(ceilDiv(q.MilliValue(), divisor.MilliValue()), 10), nil
	case name == string(v1.ResourceMemory), name == string(v1.ResourceEphemeralStorage),
		strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		return strconv.FormatInt(ceilDiv(q.Value(), divisor.Value()), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
}

func ceilDiv(a, b int64) int64 {
	return int64(math.Ceil(float64(a) / float64(b)))
}

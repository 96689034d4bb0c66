package syncloop

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nodekit/nodekit/kubetypes"
)

// maxManifestBytes is upstream's maxConfigLength: larger manifests are
// rejected.
const maxManifestBytes = 10 << 20

// ManifestError reports a static pod manifest (a file or a URL's content)
// that cannot be used. It unwraps to ErrInvalidManifest.
type ManifestError struct {
	// Location is the file path or URL.
	Location string
	// Pod is the manifest's pod name, when known.
	Pod string
	// Fields lists what is invalid, with field paths
	// ("spec.containers[0].image: Required value"). Empty when the
	// document could not be decoded at all; see Err.
	Fields field.ErrorList
	// Err is the decoding or reading error, if any.
	Err error
}

// Error names the location and the invalid fields.
func (e *ManifestError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %s", ErrInvalidManifest, e.Location)
	if e.Pod != "" {
		fmt.Fprintf(&b, " (pod %q)", e.Pod)
	}
	if len(e.Fields) > 0 {
		fmt.Fprintf(&b, ": %s", e.Fields.ToAggregate().Error())
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns ErrInvalidManifest and Err.
func (e *ManifestError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidManifest, e.Err}
	}
	return []error{ErrInvalidManifest}
}

// decodeManifest turns YAML or JSON into pods: a v1 Pod, or the items of a
// v1 PodList. Pods are not defaulted.
func decodeManifest(location string, data []byte) ([]*v1.Pod, error) {
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, &ManifestError{Location: location, Err: err}
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, &ManifestError{Location: location, Err: err}
	}
	if tm.APIVersion != "v1" {
		return nil, &ManifestError{Location: location, Fields: field.ErrorList{
			field.NotSupported(field.NewPath("apiVersion"), tm.APIVersion, []string{"v1"})}}
	}
	switch tm.Kind {
	case "Pod":
		pod := &v1.Pod{}
		if err := json.Unmarshal(js, pod); err != nil {
			return nil, &ManifestError{Location: location, Err: err}
		}
		return []*v1.Pod{pod}, nil
	case "PodList":
		list := &v1.PodList{}
		if err := json.Unmarshal(js, list); err != nil {
			return nil, &ManifestError{Location: location, Err: err}
		}
		pods := make([]*v1.Pod, len(list.Items))
		for i := range list.Items {
			pods[i] = &list.Items[i]
		}
		return pods, nil
	}
	return nil, &ManifestError{Location: location, Fields: field.ErrorList{
		field.NotSupported(field.NewPath("kind"), tm.Kind, []string{"Pod", "PodList"})}}
}

// staticPod prepares a decoded manifest pod for nodeName as upstream's
// applyDefaults and validation do: API defaults, a UID derived from the
// content, source kind and node, the name <name>-<node>, namespace
// "default", spec.nodeName, the config.hash annotation, a toleration of
// every NoExecute taint (file pods), phase Pending. It returns the
// validation errors, with field paths.
func staticPod(pod *v1.Pod, nodeName, source string) field.ErrorList {
	if pod.Name == "" {
		return field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name is needed for the pod")}
	}
	defaultPod(pod)
	if pod.UID == "" {
		pod.UID = staticPodUID(pod, nodeName, source)
	}
	pod.Name = pod.Name + "-" + strings.ToLower(nodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kubetypes.ConfigHashAnnotationKey] = string(pod.UID)
	if source == kubetypes.FileSource {
		tolerateAllNoExecute(pod)
	}
	pod.Status.Phase = v1.PodPending
	return validateStaticPod(pod)
}

// staticPodUID hashes the pod's JSON (deterministic: struct order, sorted
// map keys) with the source kind and the node name.
func staticPodUID(pod *v1.Pod, nodeName, source string) types.UID {
	h := fnv.New128a()
	data, err := json.Marshal(pod)
	if err != nil {
		// A decoded v1.Pod always marshals; fall back to the printed value.
		data = fmt.Appendf(nil, "%#v", pod)
	}
	h.Write(data)
	fmt.Fprintf(h, "host:%s", nodeName)
	fmt.Fprintf(h, "source:%s", source)
	return types.UID(hex.EncodeToString(h.Sum(nil)))
}

func tolerateAllNoExecute(pod *v1.Pod) {
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	for _, t := range pod.Spec.Tolerations {
		if t.MatchToleration(&want) && t.TolerationSeconds == nil {
			return
		}
	}
	for i, t := range pod.Spec.Tolerations {
		if t.MatchToleration(&want) {
			pod.Spec.Tolerations[i] = want
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, want)
}

// typesUID is the node reference UID the kubelet uses for node events: the
// node name.
func typesUID(nodeName string) types.UID { return types.UID(nodeName) }

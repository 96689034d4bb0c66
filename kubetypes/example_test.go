package kubetypes_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

func ExampleIsStatic() {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-node-1", Namespace: "kube-system",
		Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}}}
	fmt.Println(kubetypes.IsStatic(pod), kubetypes.IsMirror(pod), kubetypes.FullName(pod))
	// Output: true false etcd-node-1_kube-system
}

package podmanager_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/podmanager"
)

func Example() {
	m := podmanager.New()
	pod := func(uid, name string, phase v1.PodPhase) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default"}, Status: v1.PodStatus{Phase: phase}}
	}
	m.Set(pod("1", "web", v1.PodRunning))
	m.Set(pod("2", "batch", v1.PodSucceeded))
	m.Set(pod("3", "huge", v1.PodPending))
	m.Reject("3") // admission said no

	fmt.Println("desired:", len(m.Desired()), "active:", len(m.Active(nil)))
	web, _ := m.GetByName("default", "web")
	fmt.Println(kubetypes.FullName(web))
	// Output:
	// desired: 2 active: 1
	// web_default
}

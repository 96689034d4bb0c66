package podhandler_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/admission"
	"github.com/nodekit/nodekit/podhandler"
	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/podworkers/podworkerstest"
)

// onlyNamespace admits pods of one namespace.
type onlyNamespace string

func (ns onlyNamespace) Admit(_ context.Context, a admission.Attributes) admission.Result {
	if a.Pod.Namespace != string(ns) {
		return admission.Result{Reason: "WrongNamespace", Message: "this node runs " + string(ns) + " only"}
	}
	return admission.Result{Admit: true}
}

// A host hands the Handler to syncloop (Config.Handler, PodsToSync,
// PodByUID); here the pod additions are called directly and the workers
// driven synchronously.
func Example() {
	ctx := context.Background()
	syncer := &podworkerstest.Syncer{} // a real host: podsyncer.Syncer
	workers, err := podworkers.New(podworkers.Config{Syncer: syncer,
		StatusBarrier: func(context.Context, types.UID, time.Time) error { return nil }})
	if err != nil {
		panic(err)
	}
	h, err := podhandler.New(podhandler.Config{Workers: workers, Admit: onlyNamespace("edge")})
	if err != nil {
		panic(err)
	}
	pod := func(ns, name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name)}}
	}
	h.HandlePodAdditions(ctx, []*v1.Pod{pod("edge", "sensor"), pod("default", "web")})
	workers.ProcessPending(ctx)
	for _, line := range podworkerstest.Transcript(syncer.Calls()) {
		fmt.Println(line)
	}
	fmt.Println("rejected web:", h.Pods().Rejected("web"), "active:", len(h.ActivePods()))
	// Output:
	// SyncPod create sensor
	// rejected web: true active: 1
}

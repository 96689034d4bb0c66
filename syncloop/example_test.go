package syncloop_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/prober"
	"github.com/nodekit/nodekit/syncloop"
)

// host is a toy Handler that prints what the loop asks of it.
type host struct{}

func (host) HandlePodAdditions(_ context.Context, pods []*v1.Pod) { show("add", pods) }
func (host) HandlePodUpdates(_ context.Context, pods []*v1.Pod)   { show("update", pods) }
func (host) HandlePodRemoves(_ context.Context, pods []*v1.Pod)   { show("remove", pods) }
func (host) HandlePodReconcile(_ context.Context, pods []*v1.Pod) { show("reconcile", pods) }
func (host) HandlePodSyncs(_ context.Context, pods []*v1.Pod)     { show("sync", pods) }
func (host) HandlePodCleanups(context.Context) error              { fmt.Println("housekeeping"); return nil }

func show(what string, pods []*v1.Pod) {
	for _, p := range pods {
		fmt.Println(what, p.Name, p.Annotations[kubetypes.ConfigSourceAnnotationKey])
	}
}

// Example drives the loop's synchronous core with a fake clock: the host
// feeds a snapshot, a PLEG event and a probe result, and steps time to the
// housekeeping tick.
func Example() {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(metav1.Now().Time)
	loop, err := syncloop.New(syncloop.Config{
		Handler:         host{},
		ExternalSources: []string{kubetypes.APIServerSource},
		Clock:           clk,
		OnProbeResult: func(_ context.Context, t prober.ProbeType, u prober.Update) {
			fmt.Println("status:", t, u.ContainerID, u.Result)
		},
	})
	if err != nil {
		panic(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	loop.Set(ctx, kubetypes.APIServerSource, []*v1.Pod{pod})
	loop.Iterate(ctx)

	loop.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "uid-1", Type: pleg.ContainerStarted, ContainerID: containerid.ID{ID: "abc"}})
	loop.HandleProbeUpdate(prober.Readiness, prober.Update{ContainerID: containerid.ID{Type: "cri", ID: "abc"}, PodUID: "uid-1", Result: prober.Success})
	loop.Iterate(ctx)

	clk.Step(syncloop.DefaultHousekeepingPeriod)
	loop.Iterate(ctx)
	// Output:
	// add web api
	// status: Readiness cri://abc Success
	// sync web api
	// housekeeping
}

// Example_run shows a host wiring pod sources and running the loop. The
// PLEG and the prober deliver straight into the loop (their Sink is the
// loop's HandlePLEGEvent and HandleProbeUpdate, which never block), and
// the loop asks the pod workers for due pods with DuePods.
func Example_run() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	const node = "node-a"
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fmt.Println(err)
		return
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	api, _ := syncloop.NewAPIServerSource(syncloop.APIServerSourceConfig{Client: client, NodeName: node})
	files, _ := syncloop.NewFileSource(syncloop.FileSourceConfig{Path: "/etc/kubernetes/manifests", NodeName: node})
	loop, err := syncloop.New(syncloop.Config{
		Handler: host{},
		Sources: []syncloop.Source{api, files},
		// RuntimeHealth: gen.Healthy  (a *pleg.Generator)
		// PodsToSync:    workers.DuePods  (a *podworkers.Workers)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// pleg.New(pleg.Config{..., Sink: loop.HandlePLEGEvent})
	// prober.New(prober.Config{..., Sink: loop.HandleProbeUpdate})
	if err := loop.Run(ctx); err != nil {
		fmt.Println(err)
	}
}

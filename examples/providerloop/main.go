// Command providerloop is the smallest CRI node agent nodekit makes: static
// pods from a manifest directory, run by the in-process CRI simulator
// through pleg + podworkers + syncloop. It prints each pod lifecycle event.
//
//	go run ./examples/providerloop --pod-manifest-path DIR [--duration 30s]
//
// Without --pod-manifest-path it writes a pod whose container exits every
// 3 seconds, so the restarts show. Ctrl-C stops it. It has no crash
// back-off, probes, volumes or API server: the reference agent
// (examples/kubelet) shows where those plug in.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/syncloop"
)

const demoPod = "apiVersion: v1\nkind: Pod\nmetadata: {name: ticker}\nspec:\n  containers: [{name: app, image: busybox}]\n"

func main() {
	dir := flag.String("pod-manifest-path", "", "directory of static pod manifests (default: a demo pod)")
	duration := flag.Duration("duration", 0, "stop after this long (default: until Ctrl-C)")
	flag.Parse()
	if err := run(*dir, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "providerloop:", err)
		os.Exit(1)
	}
}

func run(dir string, duration time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	state, err := os.MkdirTemp("", "providerloop-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	sim := crisim.New(crisim.Config{})
	if dir == "" {
		dir = filepath.Join(state, "manifests")
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "ticker.yaml"), []byte(demoPod), 0o644); err != nil {
			return err
		}
		sim.Script(crisim.Match{Container: "app"}, crisim.Script{ExitAfter: 3 * time.Second, ExitCode: 1})
	}
	endpoint, stopSim, err := sim.ListenAndServe(filepath.Join(state, "cri.sock"))
	if err != nil {
		return err
	}
	defer stopSim()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 10*time.Second, nil, false)
	if err != nil {
		return err
	}
	images, err := remote.NewRemoteImageService(ctx, endpoint, 10*time.Second, nil, false)
	if err != nil {
		return err
	}
	files, err := syncloop.NewFileSource(syncloop.FileSourceConfig{Path: dir, NodeName: "node-1"})
	if err != nil {
		return err
	}

	// The PLEG's cache first: pod workers wait on it, the syncer reads it.
	cache := pleg.NewCache()
	workers, err := podworkers.New(podworkers.Config{Syncer: &syncer{rt: rt, images: images, cache: cache}, StatusBarrier: cache.WaitNewerThan})
	if err != nil {
		return err
	}
	h := &handler{workers: workers}
	var gen *pleg.Generator
	loop, err := syncloop.New(syncloop.Config{Handler: h, Sources: []syncloop.Source{files},
		RuntimeHealth: func() error { return gen.Healthy() }, PodsToSync: workers.DuePods})
	if err != nil {
		return err
	}
	h.loop = loop
	gen, err = pleg.New(pleg.Config{Runtime: rt, RuntimeName: "crisim", Cache: cache,
		Sink: func(ev pleg.PodLifecycleEvent) {
			fmt.Printf("%s pod %s: %s %s\n", time.Now().Format("15:04:05"), ev.ID, ev.Type, ev.ContainerID)
			loop.HandlePLEGEvent(ev)
		}})
	if err != nil {
		return err
	}
	if _, err := gen.Relist(ctx); err != nil { // healthy before the loops start
		return err
	}
	// The first loop to fail stops the others.
	ctx, stopAll := context.WithCancelCause(ctx)
	defer stopAll(nil)
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{gen.Run, workers.Run, loop.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				stopAll(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// handler maps the sync loop's operations onto pod workers, as the
// syncloop package doc describes (no mirror pods, no admission).
type handler struct {
	workers *podworkers.Workers
	loop    *syncloop.Loop
}

func (h *handler) send(ctx context.Context, t podworkers.UpdateType, pods []*v1.Pod) {
	for _, p := range pods {
		if err := h.workers.UpdatePod(ctx, podworkers.Update{Type: t, Pod: p}); err != nil {
			fmt.Fprintln(os.Stderr, "update refused:", err)
		}
	}
}
func (h *handler) HandlePodAdditions(ctx context.Context, p []*v1.Pod) {
	h.send(ctx, podworkers.UpdateCreate, p)
}
func (h *handler) HandlePodUpdates(ctx context.Context, p []*v1.Pod) {
	h.send(ctx, podworkers.UpdateUpdate, p)
}
func (h *handler) HandlePodRemoves(ctx context.Context, p []*v1.Pod) {
	h.send(ctx, podworkers.UpdateKill, p)
}
func (h *handler) HandlePodSyncs(ctx context.Context, p []*v1.Pod) {
	h.send(ctx, podworkers.UpdateSync, p)
}
func (h *handler) HandlePodReconcile(context.Context, []*v1.Pod) {}
func (h *handler) HandlePodCleanups(ctx context.Context) error {
	desired := sets.New[types.UID]()
	for _, p := range h.loop.Pods() {
		desired.Insert(p.UID)
	}
	h.workers.SyncKnownPods(ctx, desired)
	return nil
}

// syncer runs a pod as one sandbox and its containers, restarting exited
// ones (restartPolicy Always), and stops everything on termination.
type syncer struct {
	rt     criapi.RuntimeService
	images criapi.ImageManagerService
	cache  *pleg.Cache
}

func (s *syncer) SyncPod(ctx context.Context, _ podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
	st, err := s.cache.Get(pod.UID)
	if err != nil {
		return false, err
	}
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Labels: map[string]string{pleg.PodUIDLabel: string(pod.UID)}}
	sandbox := ""
	for _, sb := range st.SandboxStatuses {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			sandbox = sb.Id
		}
	}
	if sandbox == "" {
		if sandbox, err = s.rt.RunPodSandbox(ctx, sbCfg, ""); err != nil {
			return false, err
		}
	}
	for _, c := range pod.Spec.Containers {
		attempts, running := 0, false
		for _, cs := range st.ContainerStatuses {
			if cs.Metadata.Name == c.Name {
				attempts++
				running = running || cs.State != runtimeapi.ContainerState_CONTAINER_EXITED
			}
		}
		if running {
			continue
		}
		if _, err := s.images.PullImage(ctx, &runtimeapi.ImageSpec{Image: c.Image}, nil, sbCfg); err != nil {
			return false, err
		}
		id, err := s.rt.CreateContainer(ctx, sandbox, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(attempts)},
			Image: &runtimeapi.ImageSpec{Image: c.Image}, Labels: sbCfg.Labels}, sbCfg)
		if err != nil {
			return false, err
		}
		if err := s.rt.StartContainer(ctx, id); err != nil {
			return false, err
		}
	}
	return false, nil
}

func (s *syncer) stop(ctx context.Context, uid types.UID, grace int64) error {
	st, err := s.cache.Get(uid)
	if err != nil {
		return err
	}
	for _, cs := range st.ContainerStatuses {
		if err := s.rt.StopContainer(ctx, cs.Id, grace); err != nil {
			return err
		}
	}
	for _, sb := range st.SandboxStatuses {
		if err := s.rt.StopPodSandbox(ctx, sb.Id); err != nil {
			return err
		}
	}
	return nil
}

func (s *syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, grace int64, _ podworkers.StatusFunc) error {
	return s.stop(ctx, pod.UID, grace)
}
func (s *syncer) SyncTerminatingRuntimePod(ctx context.Context, p *podworkers.RuntimePod) error {
	return s.stop(ctx, p.UID, 0)
}
func (s *syncer) SyncTerminatedPod(context.Context, *v1.Pod) error { return nil }

package syncloop

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// recorder is a Handler that writes a transcript line per call.
type recorder struct {
	mu       sync.Mutex
	lines    []string
	block    chan struct{} // if set, every call waits on it
	cleanErr error
}

func (r *recorder) rec(op string, pods []*v1.Pod) {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	sort.Strings(names)
	r.mu.Lock()
	r.lines = append(r.lines, fmt.Sprintf("%s %s", op, strings.Join(names, ",")))
	block := r.block
	r.mu.Unlock()
	if block != nil {
		<-block
	}
}

func (r *recorder) HandlePodAdditions(_ context.Context, pods []*v1.Pod) { r.rec("ADD", pods) }
func (r *recorder) HandlePodUpdates(_ context.Context, pods []*v1.Pod)   { r.rec("UPDATE", pods) }
func (r *recorder) HandlePodRemoves(_ context.Context, pods []*v1.Pod)   { r.rec("REMOVE", pods) }
func (r *recorder) HandlePodReconcile(_ context.Context, pods []*v1.Pod) { r.rec("RECONCILE", pods) }
func (r *recorder) HandlePodSyncs(_ context.Context, pods []*v1.Pod)     { r.rec("SYNC", pods) }
func (r *recorder) HandlePodCleanups(_ context.Context) error {
	r.rec("CLEANUP", nil)
	return r.cleanErr
}

// take returns and clears the transcript.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines
	r.lines = nil
	return out
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lines)
}

// testPod is a minimal valid pod.
func testPod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metaFor(name, uid),
		Spec: v1.PodSpec{
			NodeName:   "node-a",
			Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}},
		},
	}
}

// testSource is a Source whose snapshots the test sends.
type testSource struct {
	name string
	set  chan SetFunc
}

func newTestSource(name string) *testSource {
	return &testSource{name: name, set: make(chan SetFunc, 1)}
}

func (s *testSource) Name() string { return s.name }

func (s *testSource) Run(ctx context.Context, set SetFunc) error {
	s.set <- set
	<-ctx.Done()
	return nil
}

func metaFor(name string, uid types.UID) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid}
}

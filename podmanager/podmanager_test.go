package podmanager

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/kubetypes"
)

func pod(uid, name string, created int64, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns",
		CreationTimestamp: metav1.NewTime(time.Unix(created, 0))}, Status: v1.PodStatus{Phase: phase}}
}

func uids(ps []*v1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p.UID))
	}
	sort.Strings(out)
	return out
}

func TestManager(t *testing.T) {
	m := New()
	m.Set(pod("a", "web", 1, v1.PodRunning))
	m.Set(pod("b", "web", 2, v1.PodPending)) // web's replacement
	m.Set(pod("c", "job", 1, v1.PodSucceeded))
	m.Set(pod("d", "big", 1, v1.PodPending))
	m.Set(pod("e", "gone", 1, v1.PodRunning))
	m.Reject("d")

	got, ok := m.GetByName("ns", "web")
	assert.True(t, ok)
	assert.Equal(t, types.UID("b"), got.UID, "the newer of two pods with one name")
	_, ok = m.GetByName("other", "web")
	assert.False(t, ok)

	assert.True(t, m.Rejected("d"))
	desired := m.Desired()
	sort.Slice(desired, func(i, j int) bool { return desired[i] < desired[j] })
	assert.Equal(t, []types.UID{"a", "b", "c", "e"}, desired)
	assert.Equal(t, []string{"a", "b", "e"}, uids(m.Active(nil)), "terminal and rejected pods hold nothing")
	assert.Equal(t, []string{"a", "b"}, uids(m.Active(func(u types.UID) bool { return u == "e" })))
	assert.Len(t, m.Pods(), 5)

	m.Remove("d")
	assert.False(t, m.Rejected("d"), "a removed pod's rejection goes with it")
	_, ok = m.Get("d")
	assert.False(t, ok)

	static := pod("s", "etcd-node", 1, v1.PodRunning)
	mirror := pod("m", "etcd-node", 2, v1.PodRunning)
	assert.Nil(t, m.MirrorOf(static))
	m.SetMirror(mirror)
	assert.Same(t, mirror, m.MirrorOf(static))
	m.RemoveMirror(mirror)
	assert.Nil(t, m.MirrorOf(static))
	assert.Equal(t, "etcd-node_ns", kubetypes.FullName(static))

	// A mirror replaced under its full name is not forgotten with the old.
	newer := pod("m2", "etcd-node", 3, v1.PodRunning)
	m.SetMirror(newer)
	m.RemoveMirror(mirror)
	assert.Same(t, newer, m.MirrorOf(static))

	// Orphans: mirrors without a static pod of their full name.
	assert.Equal(t, []*v1.Pod{newer}, m.OrphanedMirrors(), "no static pod etcd-node held")
	static.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}
	m.Set(static)
	assert.Empty(t, m.OrphanedMirrors())
}

func TestMirrorCount(t *testing.T) {
	m := New()
	assert.Zero(t, m.MirrorCount())
	mirror := pod("m1", "etcd", 1, v1.PodRunning)
	m.SetMirror(mirror)
	m.SetMirror(mirror) // the same full name is one mirror
	m.SetMirror(pod("m2", "apiserver", 1, v1.PodRunning))
	assert.Equal(t, 2, m.MirrorCount())
	m.RemoveMirror(mirror)
	assert.Equal(t, 1, m.MirrorCount())
}

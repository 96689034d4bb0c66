package userns

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// benchPods is the kubelet's default maxPods.
const benchPods = 110

// benchManager is a Manager over a temporary directory holding benchPods
// pods with ranges; memory skips the file writes.
func benchManager(b *testing.B, memory bool) (*Manager, []types.UID) {
	b.Helper()
	m, err := New(Config{RootDir: b.TempDir(), Range: DefaultRange(0)})
	if err != nil {
		b.Fatal(err)
	}
	if memory {
		m.write = func(types.UID, IDRange) error { return nil }
	}
	uids := make([]types.UID, benchPods)
	for i := range uids {
		uids[i] = types.UID(fmt.Sprintf("pod-%06d", i))
		if _, err := m.PodUserNamespace(b.Context(), userPod(uids[i]), "", true); err != nil {
			b.Fatal(err)
		}
	}
	return m, uids
}

// BenchmarkAllocateRelease churns a node at 110 pods: each op allocates a
// range to a new pod and releases the oldest pod's. "disk" includes the
// durable write (two fsyncs) and the removal; "memory" is the allocator.
func BenchmarkAllocateRelease(b *testing.B) {
	for _, mode := range []string{"disk", "memory"} {
		b.Run(mode, func(b *testing.B) {
			m, uids := benchManager(b, mode == "memory")
			ctx := b.Context()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				uid := types.UID(fmt.Sprintf("new-%09d", i))
				if _, err := m.PodUserNamespace(ctx, userPod(uid), "", true); err != nil {
					b.Fatal(err)
				}
				if err := m.Release(ctx, uids[i%benchPods]); err != nil {
					b.Fatal(err)
				}
				uids[i%benchPods] = uid
				i++
			}
		})
	}
}

// BenchmarkPodUserNamespaceExisting is the call for each container of a
// pod that has its range: a read and parse of its file.
func BenchmarkPodUserNamespaceExisting(b *testing.B) {
	m, uids := benchManager(b, false)
	ctx := b.Context()
	pod := userPod(uids[0])
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.PodUserNamespace(ctx, pod, "", true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCleanupOrphans is a housekeeping pass at 110 pods, all kept.
func BenchmarkCleanupOrphans(b *testing.B) {
	m, _ := benchManager(b, false)
	ctx := b.Context()
	keep := func(types.UID) bool { return true }
	b.ReportAllocs()
	for b.Loop() {
		if err := m.CleanupOrphans(ctx, keep); err != nil {
			b.Fatal(err)
		}
	}
}

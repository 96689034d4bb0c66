// Package volumestest is a fake volume manager for tests of the blocks
// that set pods' volumes up: it mounts nothing, records every call, gives
// each container a CRI mount per volumeMount under a directory of its own,
// and fails on demand. It implements podsyncer.Volumes and
// podhandler.OrphanCleaner (checked at compile time in those packages'
// tests, since this package imports neither).
package volumestest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Volumes is a fake volume manager, safe for concurrent use.
type Volumes struct {
	// Root holds the pod directories ("<Root>/<uid>"); the volumes of a
	// pod are "<Root>/<uid>/volumes/<name>". Nothing is created there.
	Root string
	// SetUpErr, if set, is what SetUpPod returns for a pod.
	SetUpErr func(pod *v1.Pod) error

	mu    sync.Mutex
	up    map[types.UID]bool
	calls []string
}

// SetUpPod records the pod's volumes as set up, unless SetUpErr fails it.
func (v *Volumes) SetUpPod(_ context.Context, pod *v1.Pod) error {
	var err error
	if v.SetUpErr != nil {
		err = v.SetUpErr(pod)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, "SetUpPod "+string(pod.UID))
	if err != nil {
		return err
	}
	if v.up == nil {
		v.up = map[types.UID]bool{}
	}
	v.up[pod.UID] = true
	return nil
}

// TearDownPod records the pod's volumes as torn down.
func (v *Volumes) TearDownPod(_ context.Context, uid types.UID) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, "TearDownPod "+string(uid))
	delete(v.up, uid)
	return nil
}

// ContainerMounts gives one CRI mount per volumeMount of c, from the
// volume's directory (its subPath below it); an unknown volume or a pod
// not set up is an error, as with the real manager.
func (v *Volumes) ContainerMounts(_ context.Context, pod *v1.Pod, c *v1.Container, _ map[string]string) ([]*runtimeapi.Mount, error) {
	v.mu.Lock()
	up := v.up[pod.UID]
	v.mu.Unlock()
	if !up {
		return nil, fmt.Errorf("volumestest: the volumes of pod %s are not set up", pod.UID)
	}
	declared := map[string]bool{}
	for _, vol := range pod.Spec.Volumes {
		declared[vol.Name] = true
	}
	var out []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		if !declared[m.Name] {
			return nil, fmt.Errorf("volumestest: container %s mounts volume %q the pod does not declare", c.Name, m.Name)
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: m.MountPath, Readonly: m.ReadOnly,
			HostPath: filepath.Join(v.PodDir(pod.UID), "volumes", m.Name, m.SubPath)})
	}
	return out, nil
}

// PodDir is "<Root>/<uid>".
func (v *Volumes) PodDir(uid types.UID) string { return filepath.Join(v.Root, string(uid)) }

// CleanupOrphans forgets the pods keep does not want, as torn down.
func (v *Volumes) CleanupOrphans(_ context.Context, keep func(types.UID) bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for uid := range v.up {
		if !keep(uid) {
			delete(v.up, uid)
			v.calls = append(v.calls, "CleanupOrphans "+string(uid))
		}
	}
	return nil
}

// SetUp reports whether the pod's volumes are set up.
func (v *Volumes) SetUp(uid types.UID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.up[uid]
}

// Calls are the calls so far, one line each: "SetUpPod <uid>",
// "TearDownPod <uid>", "CleanupOrphans <uid>" (one per pod forgotten).
func (v *Volumes) Calls() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.calls...)
}

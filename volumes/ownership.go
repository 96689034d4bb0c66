package volumes

import (
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// The permission bits the kubelet adds for the pod's fsGroup: group read
// (and write, on a writable volume) on everything, group search and setgid
// on directories.
const (
	fsGroupRWMask   os.FileMode = 0o660
	fsGroupROMask   os.FileMode = 0o440
	fsGroupExecMask os.FileMode = 0o110
)

// fsGroupOf returns the pod's fsGroup, nil if none.
func fsGroupOf(pod *v1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// fsUserOf returns the one user every container of the pod runs as, if
// they all set the same one (the owner of projected tokens), else nil.
func fsUserOf(pod *v1.Pod) *int64 {
	var user *int64
	check := func(c *v1.Container) bool {
		var u *int64
		if sc := pod.Spec.SecurityContext; sc != nil {
			u = sc.RunAsUser
		}
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			u = c.SecurityContext.RunAsUser
		}
		if u == nil || (user != nil && *user != *u) {
			return false
		}
		user = u
		return true
	}
	for i := range pod.Spec.InitContainers {
		if !check(&pod.Spec.InitContainers[i]) {
			return nil
		}
	}
	for i := range pod.Spec.Containers {
		if !check(&pod.Spec.Containers[i]) {
			return nil
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if !check((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)) {
			return nil
		}
	}
	return user
}

// SetOwnership applies a pod's fsGroup to a volume at dir as the kubelet
// does: group ownership of everything under dir, group read (and write
// unless readOnly), setgid and group search on directories. For a Plugin
// whose driver does not apply the fsGroup itself.
func SetOwnership(dir string, fsGroup int64, readOnly bool) error {
	return setOwnership(dir, fsGroup, readOnly)
}

// setOwnership gives the fsGroup to everything under dir: group ownership,
// group read (and write unless readOnly), and setgid plus group search on
// directories. Symlinks get the group but keep their target's mode.
func setOwnership(dir string, gid int64, readOnly bool) error {
	mask := fsGroupRWMask
	if readOnly {
		mask = fsGroupROMask
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(gid)); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if d.IsDir() {
			m |= os.ModeSetgid | fsGroupExecMask
		}
		// os.Chmod takes the setgid bit from the mode; keep what is set.
		return os.Chmod(path, info.Mode()&(os.ModePerm|os.ModeSetgid|os.ModeSetuid|os.ModeSticky)|m)
	})
}

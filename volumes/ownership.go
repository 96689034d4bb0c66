package volumes

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

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

// FSGroup returns the pod's fsGroup, nil if none.
func FSGroup(pod *v1.Pod) *int64 {
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

// SetOwnership applies the pod's fsGroup, if it has one, to a volume at
// dir as the kubelet does: group ownership of everything under dir, group
// read (and write unless readOnly), setgid and group search on
// directories; with fsGroupChangePolicy OnRootMismatch, only if the
// volume's root does not have them already. For a Plugin whose driver
// does not apply the fsGroup itself.
func SetOwnership(pod *v1.Pod, dir string, readOnly bool) error {
	gid := FSGroup(pod)
	if gid == nil {
		return nil
	}
	if sc := pod.Spec.SecurityContext; sc.FSGroupChangePolicy != nil && *sc.FSGroupChangePolicy == v1.FSGroupChangeOnRootMismatch &&
		rootMatches(dir, *gid, readOnly) {
		return nil
	}
	return setOwnership(dir, *gid, readOnly)
}

// rootMatches reports whether the directory dir already has the group
// and the permissions the fsGroup gives.
func rootMatches(dir string, gid int64, readOnly bool) bool {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid {
		return false
	}
	want := fsGroupRWMask | fsGroupExecMask
	if readOnly {
		want = fsGroupROMask | fsGroupExecMask
	}
	return info.Mode().Perm()&want == want && info.Mode()&os.ModeSetgid != 0
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

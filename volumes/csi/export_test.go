package csi_test

import (
	"crypto/sha256"
	"fmt"
	v1 "k8s.io/api/core/v1"
)

// attachmentNameForTest is the attach/detach controller's name for the
// VolumeAttachment of volume handle on node-a, computed independently.
func attachmentNameForTest(handle string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+drvName+nodeName)))
}

func podWithInlineVolume(driver string) *v1.Pod {
	p := pod("4f6e0d4c-0000-4000-8000-000000000001", v1.Volume{Name: "scratch",
		VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: driver}}})
	p.Spec.Containers = []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}}
	return p
}

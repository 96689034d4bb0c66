package csi_test

import (
	"crypto/sha256"
	"fmt"
)

// attachmentNameForTest is the attach/detach controller's name for the
// VolumeAttachment of volume handle on node-a, computed independently.
func attachmentNameForTest(handle string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+drvName+nodeName)))
}

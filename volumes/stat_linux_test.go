package volumes

import (
	"os"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

type typesUID = types.UID

func statGID(t *testing.T, info os.FileInfo) uint32 {
	t.Helper()
	return info.Sys().(*syscall.Stat_t).Gid
}

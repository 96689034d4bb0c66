package userns

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

const (
	testIDs = uint32(65536)
	// testRange skips the first block and holds 2000 pods, as upstream's
	// tests.
	testLen = testIDs * 2000
)

var testRange = IDRange{First: testIDs, Length: testLen}

// newTestManager builds a Manager over a temporary root directory.
func newTestManager(t *testing.T, mutate func(*Config)) (*Manager, string) {
	t.Helper()
	root := t.TempDir()
	cfg := Config{RootDir: root, Range: testRange}
	if mutate != nil {
		mutate(&cfg)
	}
	m, err := New(cfg)
	require.NoError(t, err)
	return m, root
}

// userPod is a pod with hostUsers: false.
func userPod(uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-" + string(uid), Namespace: "ns", UID: uid},
		Spec:       v1.PodSpec{HostUsers: ptr.To(false)},
	}
}

// writeFile writes a pod's mappings file as the kubelet would find it.
func writeFile(t *testing.T, root string, uid types.UID, content string) {
	t.Helper()
	dir := filepath.Join(root, "pods", string(uid))
	require.NoError(t, os.MkdirAll(dir, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, MappingsFile), []byte(content), 0o600))
}

// mappingsPath is the pod's mappings file under root.
func mappingsPath(root string, uid types.UID) string {
	return filepath.Join(root, "pods", string(uid), MappingsFile)
}

// testCtx is a context carrying a per-test logger.
func testCtx(t *testing.T) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

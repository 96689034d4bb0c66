package nodestatus

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestValidateKubeletLabels(t *testing.T) {
	require.NoError(t, ValidateKubeletLabels(map[string]string{
		"example.com/site": "berlin", "node.kubernetes.io/role": "edge", "kubelet.kubernetes.io/x": "",
		v1.LabelTopologyZone: "z1", "plain": "v"}))
	err := ValidateKubeletLabels(map[string]string{"node-role.kubernetes.io/master": "", "foo.k8s.io/bar": "x"})
	require.ErrorContains(t, err, "[foo.k8s.io/bar node-role.kubernetes.io/master]")
	require.Error(t, ValidateKubeletLabels(map[string]string{"bad key!": "v"}))
	require.Error(t, ValidateKubeletLabels(map[string]string{"k": "bad value!"}))
}

func TestParseTaints(t *testing.T) {
	got, err := ParseTaints("dedicated=gpu:NoSchedule, edge:PreferNoSchedule,,")
	require.NoError(t, err)
	assert.Equal(t, []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule},
		{Key: "edge", Effect: v1.TaintEffectPreferNoSchedule}}, got)
	for _, bad := range []string{"novalue", "k=v:Sometimes", ":NoSchedule", "k=bad value:NoExecute"} {
		_, err := ParseTaints(bad)
		assert.Error(t, err, bad)
	}
}

func TestAddResources(t *testing.T) {
	sum := AddResources(v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
		v1.ResourceList{v1.ResourceMemory: resource.MustParse("512Mi"), v1.ResourceCPU: resource.MustParse("100m")}, nil)
	assert.Equal(t, int64(1536<<20), sum.Memory().Value())
	assert.Equal(t, int64(100), sum.Cpu().MilliValue())
}

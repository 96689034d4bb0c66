package evictiontest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit/nodekit/eviction"
	"github.com/nodekit/nodekit/eviction/evictiontest"
	"github.com/nodekit/nodekit/kubetypes"
)

// The fake answers as the manager does.
var _ interface {
	IsUnderMemoryPressure() bool
	IsUnderDiskPressure() bool
	IsUnderPIDPressure() bool
	Conditions() []v1.NodeConditionType
	Admit(*v1.Pod) kubetypes.AdmitResult
} = (*eviction.Manager)(nil)

func TestPressure(t *testing.T) {
	var p evictiontest.Pressure
	bestEffort := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	burstable := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Mi")}}}}}}
	assert.True(t, p.Admit(bestEffort).Admit)
	assert.False(t, p.IsUnderMemoryPressure())

	p.Set(v1.NodeMemoryPressure)
	assert.True(t, p.IsUnderMemoryPressure())
	assert.False(t, p.IsUnderDiskPressure())
	assert.False(t, p.IsUnderPIDPressure())
	assert.False(t, p.Admit(bestEffort).Admit, "no BestEffort pod under memory pressure")
	assert.True(t, p.Admit(burstable).Admit)

	p.Set(v1.NodeDiskPressure, v1.NodePIDPressure)
	assert.Equal(t, []v1.NodeConditionType{v1.NodeDiskPressure, v1.NodePIDPressure}, p.Conditions())
	assert.False(t, p.Admit(burstable).Admit)
}

// A test puts the node under pressure and checks what the block under
// test does with it.
func ExamplePressure() {
	var p evictiontest.Pressure
	p.Set(v1.NodeDiskPressure)
	r := p.Admit(&v1.Pod{})
	fmt.Println(p.IsUnderDiskPressure(), r.Admit, r.Reason)
	// Output: true false Evicted
}

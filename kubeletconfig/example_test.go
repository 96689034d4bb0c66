package kubeletconfig_test

import (
	"fmt"

	"github.com/nodekit/nodekit/kubeletconfig"
)

// A host reads the configuration file, refuses what it does not support,
// and uses the rest with the kubelet's defaults.
func ExampleParse() {
	file := []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
clusterDNS: [10.96.0.10]
maxPods: 50
cpuManagerPolicy: static
`)
	c, err := kubeletconfig.Parse("kubelet.yaml", file)
	if err != nil {
		panic(err)
	}
	fmt.Println(c.MaxPods, c.ClusterDNS, c.Port, c.Authorization.Mode, c.Sets("port"))
	fmt.Println(c.CheckSupported("clusterDNS", "maxPods"))

	_, err = kubeletconfig.Parse("kubelet.yaml", []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPod: 50\n"))
	fmt.Println(err)
	// Output:
	// 50 [10.96.0.10] 10250 Webhook false
	// unsupported KubeletConfiguration fields in kubelet.yaml (set to a value other than the default, and not supported by this agent): cpuManagerPolicy
	// kubelet config kubelet.yaml:3: unknown field "maxPod"
}

package syncloop

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

const goodManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  hostNetwork: true
  containers:
  - name: nginx
    image: nginx
    ports: [{containerPort: 80}]
    livenessProbe:
      httpGet: {port: 80}
    resources:
      limits: {cpu: 100m}
  volumes:
  - name: data
`

func TestStaticPodDefaults(t *testing.T) {
	pod, err := parseStaticPod("/m/web.yaml", []byte(goodManifest), "Node-A", kubetypes.FileSource)
	require.NoError(t, err)
	require.Equal(t, "web-node-a", pod.Name)
	require.Equal(t, "default", pod.Namespace)
	require.Equal(t, "Node-A", pod.Spec.NodeName)
	require.Len(t, string(pod.UID), 32)
	require.Equal(t, string(pod.UID), pod.Annotations[kubetypes.ConfigHashAnnotationKey])
	require.Equal(t, v1.PodPending, pod.Status.Phase)
	s := pod.Spec
	require.Equal(t, v1.RestartPolicyAlways, s.RestartPolicy)
	require.Equal(t, v1.DNSClusterFirst, s.DNSPolicy)
	require.Equal(t, int64(30), *s.TerminationGracePeriodSeconds)
	require.Equal(t, "default-scheduler", s.SchedulerName)
	require.True(t, *s.EnableServiceLinks)
	require.Equal(t, []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}, s.Tolerations)
	c := s.Containers[0]
	require.Equal(t, "/dev/termination-log", c.TerminationMessagePath)
	require.Equal(t, v1.TerminationMessageReadFile, c.TerminationMessagePolicy)
	require.Equal(t, v1.PullAlways, c.ImagePullPolicy)
	require.Equal(t, v1.ProtocolTCP, c.Ports[0].Protocol)
	require.Equal(t, int32(80), c.Ports[0].HostPort)
	require.Equal(t, int32(3), c.LivenessProbe.FailureThreshold)
	require.Equal(t, "/", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "100m", c.Resources.Requests.Cpu().String())
	require.NotNil(t, s.Volumes[0].EmptyDir)

	// The UID depends on content, node and source kind only.
	again, err := parseStaticPod("/elsewhere/renamed.yaml", []byte(goodManifest), "Node-A", kubetypes.FileSource)
	require.NoError(t, err)
	require.Equal(t, pod.UID, again.UID)
	other, err := parseStaticPod("/m/web.yaml", []byte(goodManifest), "node-b", kubetypes.FileSource)
	require.NoError(t, err)
	require.NotEqual(t, pod.UID, other.UID)
	url, err := parseStaticPod("http://x", []byte(goodManifest), "Node-A", kubetypes.HTTPSource)
	require.NoError(t, err)
	require.NotEqual(t, pod.UID, url.UID)
	require.Empty(t, url.Spec.Tolerations, "like upstream, only file pods get the NoExecute toleration")
	changed, err := parseStaticPod("/m/web.yaml", []byte(strings.Replace(goodManifest, "image: nginx", "image: nginx:1.27", 1)), "Node-A", kubetypes.FileSource)
	require.NoError(t, err)
	require.NotEqual(t, pod.UID, changed.UID)
	require.Equal(t, v1.PullIfNotPresent, changed.Spec.Containers[0].ImagePullPolicy)
}

func TestPullPolicyDefault(t *testing.T) {
	for image, want := range map[string]v1.PullPolicy{
		"nginx": v1.PullAlways, "nginx:latest": v1.PullAlways, "nginx:1.2": v1.PullIfNotPresent,
		"reg:5000/nginx": v1.PullAlways, "reg:5000/nginx:1": v1.PullIfNotPresent, "nginx@sha256:abc": v1.PullIfNotPresent,
	} {
		require.Equal(t, want, defaultPullPolicy(image), image)
	}
}

func TestInvalidManifestsNameTheField(t *testing.T) {
	cases := []struct {
		name, manifest, want string
	}{
		{"garbage", "{{{", "/m/x.yaml: invalid character"},
		{"not yaml", "a: b: c", "/m/x.yaml: yaml: mapping values"},
		{"wrong kind", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", `kind: Unsupported value: "Service"`},
		{"wrong version", "apiVersion: v2\nkind: Pod\n", `apiVersion: Unsupported value: "v2"`},
		{"no name", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n", "metadata.name: Required value"},
		{"bad name", "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: c, image: i}]}\n", "metadata.name: Invalid value"},
		{"bad namespace", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: NS}\nspec: {containers: [{name: c, image: i}]}\n", "metadata.namespace: Invalid value"},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", "spec.containers: Required value"},
		{"no image", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n", "spec.containers[0].image: Required value"},
		{"duplicate container", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {initContainers: [{name: c, image: i}], containers: [{name: c, image: i}]}\n", "spec.containers[0].name: Duplicate value"},
		{"bad restart policy", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {restartPolicy: Sometimes, containers: [{name: c, image: i}]}\n", "spec.restartPolicy: Unsupported value"},
		{"secret volume", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}], volumes: [{name: v, secret: {secretName: s}}]}\n", "spec.volumes[0].secret: Forbidden: static pods may not reference secrets"},
		{"service account", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {serviceAccountName: sa, containers: [{name: c, image: i}]}\n", "spec.serviceAccountName: Forbidden"},
		{"list in a file", "apiVersion: v1\nkind: PodList\nitems: []\n", "must hold one Pod, found 0"},
		{"uid with a path", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: ../../../x}\nspec: {containers: [{name: c, image: i}]}\n", "metadata.uid: Invalid value"},
		{"uid dot dot", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: a..b}\nspec: {containers: [{name: c, image: i}]}\n", `must not be "." or contain ".."`},
		{"volume name escapes", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}], volumes: [{name: ../../../../../../escape-vol, emptyDir: {}}]}\n", "spec.volumes[0].name: Invalid value"},
		{"duplicate volume", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}], volumes: [{name: v, emptyDir: {}}, {name: v, emptyDir: {}}]}\n", "spec.volumes[1].name: Duplicate value"},
		{"mount of no volume", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v}]}]}\n", "spec.containers[0].volumeMounts[0].name: Not found"},
		{"subPath up", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, subPath: a/../../b}]}], volumes: [{name: v, emptyDir: {}}]}\n", "subPath: Invalid value"},
		{"subPath absolute", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, subPath: /etc}]}], volumes: [{name: v, emptyDir: {}}]}\n", "must be a relative path"},
		{"ephemeral container name", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}], ephemeralContainers: [{name: ../d, image: i}]}\n", "spec.ephemeralContainers: Forbidden: cannot be set on create"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseStaticPod("/m/x.yaml", []byte(c.manifest), "node-a", kubetypes.FileSource)
			require.ErrorIs(t, err, ErrInvalidManifest)
			var me *ManifestError
			require.True(t, errors.As(err, &me))
			require.Equal(t, "/m/x.yaml", me.Location)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

// FuzzParseStaticPod: any bytes as a manifest file give either a
// *ManifestError or a prepared static pod, never a panic.
func FuzzParseStaticPod(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: busybox}]\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j","namespace":"ns"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80,"hostPort":8080}]}]}}`))
	f.Add([]byte("apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: c, image: i}]}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: \"\"}\n"))
	f.Add([]byte("apiVersion: v2\nkind: Deployment\n"))
	f.Add([]byte("{{{{"))
	f.Add([]byte("- [a, b]\n- {c: d}\n"))
	f.Add([]byte{0xff, 0xfe, 0x00})
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: \"../../../x\"}\nspec:\n  containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, subPath: a}]}]\n  volumes: [{name: \"../../../../../../escape-vol\", emptyDir: {}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, err := parseStaticPod("fuzz.yaml", data, "node-1", "file")
		if err != nil {
			var me *ManifestError
			require.True(t, errors.As(err, &me), "error %v is not a *ManifestError", err)
			require.Contains(t, err.Error(), "fuzz.yaml")
			return
		}
		require.NotEmpty(t, pod.UID)
		require.Equal(t, "node-1", pod.Spec.NodeName)
		require.True(t, strings.HasSuffix(pod.Name, "-node-1"), pod.Name)
		require.NotEmpty(t, pod.Namespace)
		require.NotEmpty(t, pod.Spec.Containers)
		// Nothing that names a directory of the pod can leave it.
		for _, name := range append([]string{string(pod.UID)}, volumeNames(pod)...) {
			require.NotContains(t, name, "/")
			require.NotContains(t, name, "..")
		}
	})
}

func volumeNames(pod *v1.Pod) []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		names = append(names, v.Name)
	}
	return names
}

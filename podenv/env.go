package podenv

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodekit/nodekit/downward"
)

// Objects reads configMaps and secrets (the agent's objects.Cache).
type Objects interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Pod is what the environment of one container depends on besides its
// spec.
type Pod struct {
	Pod *v1.Pod
	// HostIPs and PodIPs are the node's and the pod's addresses, primary
	// first (for hostNetwork pods PodIPs are the host's).
	HostIPs, PodIPs []string
	// Allocatable is the node's allocatable resources.
	Allocatable v1.ResourceList
	// Objects reads configMaps and secrets; nil fails pods that use them.
	Objects Objects
	// Services lists every service the node sees (for the service
	// variables); nil means none. ServicesSynced false fails API pods,
	// as on the kubelet, so that KUBERNETES_SERVICE_HOST is never missed.
	Services       func() ([]*v1.Service, error)
	ServicesSynced bool
	// Static pods do not wait for services.
	Static bool
}

// Build returns the environment of container c as name → value.
func Build(ctx context.Context, p Pod, c *v1.Container) (map[string]string, error) {
	pod := p.Pod
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	if !p.Static && p.Services != nil && !p.ServicesSynced {
		return nil, fmt.Errorf("services have not yet been read at least once, cannot construct envvars")
	}
	serviceEnv, err := serviceVars(p.Services, pod.Namespace, links)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	cms := map[string]*v1.ConfigMap{}
	secrets := map[string]*v1.Secret{}
	getCM := func(name string) (*v1.ConfigMap, error) {
		if cm, ok := cms[name]; ok {
			return cm, nil
		}
		if p.Objects == nil {
			return nil, fmt.Errorf("couldn't get configMap %v/%v, no kubeClient defined", pod.Namespace, name)
		}
		cm, err := p.Objects.ConfigMap(ctx, pod.Namespace, name)
		if err == nil {
			cms[name] = cm
		}
		return cm, err
	}
	getSecret := func(name string) (*v1.Secret, error) {
		if s, ok := secrets[name]; ok {
			return s, nil
		}
		if p.Objects == nil {
			return nil, fmt.Errorf("couldn't get secret %v/%v, no kubeClient defined", pod.Namespace, name)
		}
		s, err := p.Objects.Secret(ctx, pod.Namespace, name)
		if err == nil {
			secrets[name] = s
		}
		return s, err
	}

	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := getCM(from.ConfigMapRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, err
			}
			for k, v := range cm.Data {
				env[from.Prefix+k] = v
			}
		case from.SecretRef != nil:
			s, err := getSecret(from.SecretRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
					continue
				}
				return nil, err
			}
			for k, v := range s.Data {
				env[from.Prefix+k] = string(v)
			}
		}
	}

	lookup := func(name string) (string, bool) {
		if v, ok := env[name]; ok {
			return v, true
		}
		v, ok := serviceEnv[name]
		return v, ok
	}
	for _, e := range c.Env {
		val := e.Value
		switch {
		case val != "":
			val = Expand(val, lookup)
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil:
			if val, err = fieldValue(p, e.ValueFrom.FieldRef.FieldPath); err != nil {
				return nil, err
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			ref := e.ValueFrom.ResourceFieldRef
			name := ref.ContainerName
			if name == "" {
				name = c.Name
			}
			if val, err = downward.ContainerResource(ref, withContainer(pod, c), name, p.Allocatable); err != nil {
				return nil, err
			}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, err := getCM(ref.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
					continue
				}
				return nil, err
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
			}
			val = v
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, err := getSecret(ref.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
					continue
				}
				return nil, err
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
			}
			val = string(v)
		case e.ValueFrom.FileKeyRef != nil:
			return nil, fmt.Errorf("env %s: fileKeyRef is not supported by this node agent", e.Name)
		}
		env[e.Name] = val
	}
	for k, v := range serviceEnv {
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	return env, nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// withContainer returns pod with c among its containers (an ephemeral
// container is not in the spec's lists).
func withContainer(pod *v1.Pod, c *v1.Container) *v1.Pod {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == c.Name {
			return pod
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return pod
		}
	}
	p := pod.DeepCopy()
	p.Spec.Containers = append(p.Spec.Containers, *c)
	return p
}

// fieldValue is a fieldRef's value for an environment variable: the
// volume fields plus the node name, service account and addresses.
func fieldValue(p Pod, path string) (string, error) {
	switch path {
	case "spec.nodeName":
		return p.Pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		if len(p.HostIPs) == 0 {
			return "", fmt.Errorf("failed to get host IPs: the node has no address")
		}
		return p.HostIPs[0], nil
	case "status.hostIPs":
		if len(p.HostIPs) == 0 {
			return "", fmt.Errorf("failed to get host IPs: the node has no address")
		}
		return strings.Join(p.HostIPs, ","), nil
	case "status.podIP":
		if len(p.PodIPs) == 0 {
			return "", nil
		}
		return p.PodIPs[0], nil
	case "status.podIPs":
		return strings.Join(p.PodIPs, ","), nil
	}
	return downward.PodField(p.Pod, path)
}

// masterServices are the default namespace's services every pod sees.
var masterServices = map[string]bool{"kubernetes": true}

// serviceVars computes the service variables: the default namespace's
// "kubernetes" service always, the services of namespace ns with links.
func serviceVars(list func() ([]*v1.Service, error), ns string, links bool) (map[string]string, error) {
	out := map[string]string{}
	if list == nil {
		return out, nil
	}
	all, err := list()
	if err != nil {
		return nil, fmt.Errorf("failed to list services when setting up env vars")
	}
	chosen := map[string]*v1.Service{}
	for _, s := range all {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == v1.ClusterIPNone {
			continue
		}
		switch {
		case s.Namespace == "default" && masterServices[s.Name]:
			if _, ok := chosen[s.Name]; !ok {
				chosen[s.Name] = s
			}
		case s.Namespace == ns && links:
			chosen[s.Name] = s
		}
	}
	for _, s := range chosen {
		addServiceVars(out, s)
	}
	return out, nil
}

// addServiceVars adds one service's <NAME>_SERVICE_* and Docker link
// variables.
func addServiceVars(out map[string]string, s *v1.Service) {
	if len(s.Spec.Ports) == 0 {
		return
	}
	prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	ip := s.Spec.ClusterIP
	out[prefix+"_SERVICE_HOST"] = ip
	out[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
	for _, sp := range s.Spec.Ports {
		if sp.Name != "" {
			out[prefix+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(sp.Name, "-", "_"))] = strconv.Itoa(int(sp.Port))
		}
	}
	for i, sp := range s.Spec.Ports {
		proto := string(sp.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		lower := strings.ToLower(proto)
		url := lower + "://" + net.JoinHostPort(ip, strconv.Itoa(int(sp.Port)))
		if i == 0 {
			out[prefix+"_PORT"] = url
		}
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, sp.Port, strings.ToUpper(proto))
		out[pp] = url
		out[pp+"_PROTO"] = lower
		out[pp+"_PORT"] = strconv.Itoa(int(sp.Port))
		out[pp+"_ADDR"] = ip
	}
}

// Expand replaces $(NAME) in s with lookup(NAME) where lookup knows it,
// leaves unknown references as written, and turns $$ into $ (the API's
// escape): the rules of env values, command, args and subPathExpr.
func Expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			if v, ok := lookup(s[i+2 : i+2+end]); ok && end > 0 {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// ExpandAll expands each of ss with env (command and args).
func ExpandAll(ss []string, env map[string]string) []string {
	if len(ss) == 0 {
		return ss
	}
	look := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Expand(s, look)
	}
	return out
}

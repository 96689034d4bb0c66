package volumes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodekit/nodekit/downward"
)

// defaultFileMode is the API's default for configMap, secret, downwardAPI
// and projected volumes (0644); pods from files may come undefaulted.
const defaultFileMode int32 = 0o644

func modeOr(m *int32) int32 {
	if m != nil {
		return *m
	}
	return defaultFileMode
}

func optional(b *bool) bool { return b != nil && *b }

// keyed maps the keys of a configMap or secret to files: every key under
// its own name, or only the listed items at their paths. A listed key that
// is missing is an error ("what: key") unless the source is optional.
func keyed(what string, data map[string][]byte, items []v1.KeyToPath, mode int32, opt bool) (map[string]File, error) {
	out := make(map[string]File, len(data))
	if len(items) == 0 {
		for k, b := range data {
			out[k] = File{Data: b, Mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			if opt {
				continue
			}
			return nil, fmt.Errorf("%s: %s", what, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = *it.Mode
		}
		out[it.Path] = File{Data: b, Mode: m}
	}
	return out, nil
}

func (m *Manager) configMapPayload(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, mode int32, opt bool) (map[string]File, error) {
	if m.cfg.Objects == nil {
		return nil, fmt.Errorf("cannot read configmap %q without an API server", name)
	}
	cm, err := m.cfg.Objects.ConfigMap(ctx, pod.Namespace, name)
	if apierrors.IsNotFound(err) && opt {
		return map[string]File{}, nil
	}
	if err != nil {
		return nil, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, s := range cm.Data {
		data[k] = []byte(s)
	}
	for k, b := range cm.BinaryData {
		data[k] = b
	}
	return keyed("configmap references non-existent config key", data, items, mode, opt)
}

func (m *Manager) secretPayload(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, mode int32, opt bool) (map[string]File, error) {
	if m.cfg.Objects == nil {
		return nil, fmt.Errorf("cannot read secret %q without an API server", name)
	}
	sec, err := m.cfg.Objects.Secret(ctx, pod.Namespace, name)
	if apierrors.IsNotFound(err) && opt {
		return map[string]File{}, nil
	}
	if err != nil {
		return nil, err
	}
	return keyed("references non-existent secret key", sec.Data, items, mode, opt)
}

// downwardPayload renders downward API items: pod fields and container
// resources.
func (m *Manager) downwardPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, mode int32) (map[string]File, error) {
	out := make(map[string]File, len(items))
	var errs []error
	for _, it := range items {
		f := File{Mode: mode}
		if it.Mode != nil {
			f.Mode = *it.Mode
		}
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = downward.PodField(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			val, err = downward.ContainerResource(it.ResourceFieldRef, pod, it.ResourceFieldRef.ContainerName, m.cfg.Allocatable())
		}
		if err != nil {
			errs = append(errs, err)
		}
		f.Data = []byte(val)
		out[filepath.Clean(it.Path)] = f
	}
	return out, errors.Join(errs...)
}

// projectedPayload merges the sources of a projected volume. Token files
// are 0600 (0640 with the fsGroup mask) when the pod has an fsGroup or a
// single user, owned by that user.
func (m *Manager) projectedPayload(ctx context.Context, pod *v1.Pod, src *v1.ProjectedVolumeSource) (map[string]File, error) {
	mode := modeOr(src.DefaultMode)
	fsUser, fsGroup := fsUserOf(pod), FSGroup(pod)
	out := map[string]File{}
	var errs []error
	merge := func(files map[string]File, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		for k, f := range files {
			out[k] = f
		}
	}
	for _, s := range src.Sources {
		switch {
		case s.ConfigMap != nil:
			merge(m.configMapPayload(ctx, pod, s.ConfigMap.Name, s.ConfigMap.Items, mode, optional(s.ConfigMap.Optional)))
		case s.Secret != nil:
			merge(m.secretPayload(ctx, pod, s.Secret.Name, s.Secret.Items, mode, optional(s.Secret.Optional)))
		case s.DownwardAPI != nil:
			merge(m.downwardPayload(pod, s.DownwardAPI.Items, mode))
		case s.ServiceAccountToken != nil:
			tok, err := m.tokens.token(ctx, pod, s.ServiceAccountToken)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			f := File{Data: []byte(tok), Mode: mode, FsUser: fsUser}
			if fsUser != nil || fsGroup != nil {
				f.Mode = 0o600
			}
			out[s.ServiceAccountToken.Path] = f
		case s.ClusterTrustBundle != nil:
			errs = append(errs, errors.New("clusterTrustBundle projections are not supported by this node agent"))
		case s.PodCertificate != nil:
			errs = append(errs, errors.New("podCertificate projections are not supported by this node agent"))
		}
	}
	return out, errors.Join(errs...)
}

package images

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Keyring holds registry credentials by registry location (host, optional
// port and path; the host may hold globs such as *.example.com).
type Keyring struct {
	entries map[string][]*runtimeapi.AuthConfig
}

// dockerEntry is one registry's entry in a docker config: username and
// password given directly or as base64("user:password") in auth.
type dockerEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// KeyringFromSecrets reads the docker configs of secrets of type
// kubernetes.io/dockerconfigjson (key .dockerconfigjson, {"auths": {...}})
// and kubernetes.io/dockercfg (key .dockercfg, the map itself); other
// secrets are ignored. A config that does not parse is an error naming
// its secret.
func KeyringFromSecrets(secrets []*v1.Secret) (*Keyring, error) {
	k := &Keyring{entries: map[string][]*runtimeapi.AuthConfig{}}
	for _, s := range secrets {
		var auths map[string]dockerEntry
		switch {
		case s.Type == v1.SecretTypeDockerConfigJson && len(s.Data[v1.DockerConfigJsonKey]) > 0:
			var cfg struct {
				Auths map[string]dockerEntry `json:"auths"`
			}
			if err := json.Unmarshal(s.Data[v1.DockerConfigJsonKey], &cfg); err != nil {
				return nil, fmt.Errorf("image pull secret %s/%s: %w", s.Namespace, s.Name, err)
			}
			auths = cfg.Auths
		case s.Type == v1.SecretTypeDockercfg && len(s.Data[v1.DockerConfigKey]) > 0:
			if err := json.Unmarshal(s.Data[v1.DockerConfigKey], &auths); err != nil {
				return nil, fmt.Errorf("image pull secret %s/%s: %w", s.Namespace, s.Name, err)
			}
		default:
			continue
		}
		for loc, e := range auths {
			if err := k.add(loc, e); err != nil {
				return nil, fmt.Errorf("image pull secret %s/%s: registry %q: %w", s.Namespace, s.Name, loc, err)
			}
		}
	}
	return k, nil
}

func (k *Keyring) add(loc string, e dockerEntry) error {
	if e.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(e.Auth)
		if err != nil {
			return fmt.Errorf("auth is not base64: %w", err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return fmt.Errorf("auth is not user:password")
		}
		e.Username, e.Password = user, strings.Trim(pass, "\x00")
	}
	if !strings.HasPrefix(loc, "https://") && !strings.HasPrefix(loc, "http://") {
		loc = "https://" + loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		return err
	}
	p := u.Path
	if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
		p = p[3:] // API version prefixes are not part of the repository
	}
	key := u.Host
	if p != "" && p != "/" {
		key += p
	}
	// No ServerAddress, as the kubelet: containerd ignores credentials
	// whose address does not parse as a URL of the registry host, and
	// "host:port" does not.
	k.entries[key] = append(k.entries[key], &runtimeapi.AuthConfig{Username: e.Username, Password: e.Password})
	return nil
}

// Lookup returns the credentials that apply to image, most specific
// location first (locations in reverse lexical order, as the kubelet).
// For an image of Docker Hub the index.docker.io entry applies too.
func (k *Keyring) Lookup(image string) []*runtimeapi.AuthConfig {
	if k == nil || len(k.entries) == 0 {
		return nil
	}
	keys := make([]string, 0, len(k.entries))
	for key := range k.entries {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	var out []*runtimeapi.AuthConfig
	for _, key := range keys {
		if locationMatches(key, image) {
			out = append(out, k.entries[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(image) {
		out = k.entries["index.docker.io"]
	}
	return out
}

// locationMatches: the image's registry host has as many labels as the
// location's, each matching its glob, the same port, and the image's
// path starts with the location's path.
func locationMatches(location, image string) bool {
	lu, err := url.Parse("https://" + location)
	if err != nil {
		return false
	}
	iu, err := url.Parse("https://" + image)
	if err != nil {
		return false
	}
	lHost, lPort := splitHostPort(lu.Host)
	iHost, iPort := splitHostPort(iu.Host)
	if lPort != iPort || len(lHost) != len(iHost) || !strings.HasPrefix(iu.Path, lu.Path) {
		return false
	}
	for i := range lHost {
		if ok, err := path.Match(lHost[i], iHost[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHostPort(hostport string) (labels []string, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDockerHub: an image without a registry host (no dot or colon in its
// first component), or on docker.io.
func isDockerHub(image string) bool {
	first, _, found := strings.Cut(image, "/")
	if first == "" {
		return false
	}
	if !found || first == "docker.io" || first == "index.docker.io" {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

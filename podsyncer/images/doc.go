// Package images makes a container's image present before the reference
// agent creates the container, as the kubelet's image manager does.
//
// Puller.Ensure honours the pull policy (Always, IfNotPresent, Never),
// pulls with the credentials of the pod's image pull secrets (a Keyring
// built from kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg
// secrets, matched against the image as the kubelet's credential
// provider does: host globs, ports, path prefixes, most specific first,
// each credential tried in turn, then none), and backs off per pod and
// image after a failure: 10s doubling to 5 minutes, on the injected clock.
// Its errors carry the kubelet's waiting reasons — ErrImagePull,
// ImagePullBackOff, ErrImageNeverPull — and it reports
// the kubelet's events (Pulling, Pulled, Failed, BackOff) through a
// callback, so the caller attaches them to the container.
package images

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
// callback, so the caller attaches them to the container. With
// Config.Registerer it keeps the kubelet's
// kubelet_image_pull_duration_seconds{image_size_in_bytes}: each
// successful pull's time, its wait for a pull slot included, labelled
// with the size bucket of the image the runtime reports ("N/A" when it
// reports none).
package images

// Package kubeletconfig reads the kubelet's configuration file (a
// KubeletConfiguration, kubelet.config.k8s.io/v1beta1, the type from
// k8s.io/kubelet) as a node agent that replaces the kubelet needs to.
//
// # Model
//
// Load decodes strictly: a field the type does not have, a duplicate field
// or a value of the wrong shape is an error that names the file, the line
// and the field, as is another apiVersion or kind. SetDefaults applies the
// v1.36 kubelet's defaults to every field left unset, so a Config reads as
// the kubelet would read the same file. Unsupported and CheckSupported list
// the fields the file sets to a value other than the default that the host
// does not honour, so that a host refuses them at start-up rather than
// ignoring them.
//
// # Host duties
//
// The host loads the file named by its --config flag, refuses unsupported
// fields (CheckSupported with the dotted paths it honours), maps the
// supported ones onto its own options, and lets flags given on the command
// line override the file, as the kubelet does.
//
// # Differences from upstream
//
// Defaults are written here, from the kubelet's v1.36 defaulting, since
// k8s.io/kubernetes is never imported; feature-gated defaults follow the
// file's featureGates over the v1.36 gate defaults only for the two gates
// that change a default (KubeletCrashLoopBackOffMax,
// KubeletEnsureSecretPulledImages). Drop-in directories (--config-dir) are
// not read.
package kubeletconfig

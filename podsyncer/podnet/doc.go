// Package podnet gives a pod its name on the network as the kubelet does:
// its hostname and domain (hostname, subdomain, hostnameOverride,
// setHostnameAsFQDN), its DNS configuration (dnsPolicy ClusterFirst,
// ClusterFirstWithHostNet, Default and None, merged with dnsConfig, within
// the resolver's limits) and its kubelet-managed /etc/hosts file (with
// hostAliases, and the node's file for host-network pods).
package podnet

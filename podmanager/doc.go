// Package podmanager is the node agent's record of the pods it is meant to
// run, as the kubelet's pod manager: every pod its sources (API server,
// manifests) assigned to the node by UID, the mirror pods of its static
// pods by full name, and which pods admission rejected. It answers the
// questions the rest of the agent asks — the desired set, the active pods
// that hold resources, the pod by name for the kubelet API, a static pod's
// mirror — and does nothing else: no workers, no runtime.
package podmanager

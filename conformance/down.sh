#!/usr/bin/env bash
# down.sh — stop everything up.sh started (by the PIDs recorded in $STATE/run), remove
# all pods/containers, unmount what the node left under $STATE, delete the CNI bridge.
#   down.sh           keep data (etcd, containerd content, images, binaries)
#   down.sh --purge   also delete etcd data, containerd root/state, kubelet dir, CNI state, pki
#                     (binaries in $STATE/bin and image archives in $STATE/images are kept)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"
PURGE=${1:-}

# 1. the node agent first, so it does not restart what we remove
stop_bg prometheus
stop_bg metrics-server
stop_bg node-agent 30
stop_bg csi-hostdir
stop_bg csr-approver
# 2. every pod sandbox and container, through CRI (tears down CNI + netns)
if [ -f "$RUN/containerd.pid" ] && kill -0 "$(cat "$RUN/containerd.pid")" 2>/dev/null && [ -x "$BIN/cri" ]; then
  "$BIN/cri" -endpoint "$CRI_ENDPOINT" rmall || log "cri rmall reported failures"
fi
# 3. control plane and containerd
stop_bg kube-scheduler
stop_bg kube-controller-manager
stop_bg kube-apiserver
stop_bg etcd
stop_bg containerd
stop_bg registry
# 4. shims of *this* containerd that survived (they run in their own session):
#    match on our binary path and our socket address only
for p in $(pgrep -f "^$BIN/containerd-shim-runc-v2 .*-address $CRI_SOCKET" 2>/dev/null); do
  log "killing leftover shim pid $p"; kill -KILL "$p" 2>/dev/null
done
# containers whose shim died leave runc state; kill their init processes by runc state root
if [ -d "$CONTAINERD_DIR/state/io.containerd.runtime.v2.task/k8s.io" ]; then
  for d in "$CONTAINERD_DIR"/state/io.containerd.runtime.v2.task/k8s.io/*/; do
    [ -f "$d/init.pid" ] || continue
    p=$(cat "$d/init.pid"); kill -0 "$p" 2>/dev/null && { log "killing leftover container init $p"; kill -KILL "$p"; }
  done
fi
# 5. mounts left under $STATE (pod volumes, rootfs overlays, netns), deepest first
for i in 1 2 3; do
  mnts=$(awk -v s="$STATE/" 'index($2, s) == 1 {print $2}' /proc/mounts | sort -r)
  [ -z "$mnts" ] && break
  for m in $mnts; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
done
# 6. CNI bridge and the kubelet's legacy log symlinks (hard-coded /var/log/containers)
ip link show "$CNI_BRIDGE" >/dev/null 2>&1 && ip link delete "$CNI_BRIDGE" && log "deleted bridge $CNI_BRIDGE"
if [ -d /var/log/containers ]; then
  find /var/log/containers -maxdepth 1 -type l -lname "$STATE/*" -delete 2>/dev/null
fi
# the kubelet hard-codes /var/lib/kubelet/device-plugins (DevicePluginPath); remove it if it is all there is
if [ -d /var/lib/kubelet ] && [ "$(ls -A /var/lib/kubelet)" = device-plugins ]; then
  rm -rf /var/lib/kubelet/device-plugins && rmdir /var/lib/kubelet 2>/dev/null
fi
if [ "$PURGE" = --purge ]; then
  rm -rf "$STATE/etcd" "$CONTAINERD_DIR" "$KUBELET_DIR" "$STATE/cni" "$PKI" "$RUN" "$STATE/registry" \
    "$STATE"/*.kubeconfig "$BOOTSTRAP_KUBECONFIG"
  log "purged state (kept $BIN, $STATE/images, $LOGS, reports)"
fi
left=$(pgrep -f "^$BIN/" 2>/dev/null | tr '\n' ' ')
[ -n "$left" ] && log "WARNING: still running from $BIN: $left"
log "down"

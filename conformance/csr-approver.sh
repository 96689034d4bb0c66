#!/usr/bin/env bash
# csr-approver.sh — the operator's part of serverTLSBootstrap on the minicluster (JOIN=1):
# nothing in the control plane approves kubernetes.io/kubelet-serving requests, so this
# approves the pending ones the node ($NODE_NAME) made for itself, every 2 s. up.sh runs it.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"
while true; do
  kctl get csr -o go-template='{{range .items}}{{if eq .spec.signerName "kubernetes.io/kubelet-serving"}}{{.metadata.name}} {{.spec.username}} {{if .status.conditions}}decided{{else}}pending{{end}}{{"\n"}}{{end}}{{end}}' 2>/dev/null |
    while read -r name user state; do
      if [ "$user" = "system:node:$NODE_NAME" ] && [ "$state" = pending ]; then
        kctl certificate approve "$name" >/dev/null && log "approved $name"
      fi
    done
  sleep 2
done

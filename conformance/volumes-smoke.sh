#!/usr/bin/env bash
# volumes-smoke.sh — on a running cluster (run.sh with KEEP=1, or up.sh; CSI_DRIVER=1 for the
# CSI case), issue 34's acceptance check: a pod on a local-path-style hostPath PersistentVolume
# and a pod on a CSI volume (csi.nodekit.io, provisioned dynamically) keep their data across a
# container restart. Each pod's container writes a stamp to its volume and exits 1 on its
# first run; after the restart it must find the stamp and keep running. Prints PASS/FAIL per
# volume and exits non-zero on any failure. Cleans up after itself.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"
NS=volumes-smoke
kctl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
kctl create namespace "$NS" >/dev/null
trap 'kctl delete namespace "$NS" --wait=false >/dev/null 2>&1; kctl delete pv volumes-smoke-hostpath --wait=false >/dev/null 2>&1; kctl delete storageclass volumes-smoke-csi --wait=false >/dev/null 2>&1' EXIT
# The restart test: first run writes the stamp and fails; a restart must find it.
script='if [ -f /data/stamp ]; then echo "found $(cat /data/stamp)"; sleep 3600; else echo "first run" > /data/stamp; echo wrote; exit 1; fi'
pod() { # NAME CLAIM
  kctl -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: registry.k8s.io/e2e-test-images/busybox:1.37.0-1
    command: [sh, -c, '$script']
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: $2}}]
YAML
}
kctl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: volumes-smoke-hostpath}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  claimRef: {namespace: $NS, name: hostpath}
  hostPath: {path: $STATE/volumes-smoke/hostpath, type: DirectoryOrCreate}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: hostpath, namespace: $NS}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: volumes-smoke-hostpath
  resources: {requests: {storage: 1Gi}}
YAML
rm -rf "$STATE/volumes-smoke/hostpath"
pod on-hostpath hostpath
cases=on-hostpath
if kctl get csidriver csi.nodekit.io >/dev/null 2>&1; then
  kctl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: volumes-smoke-csi}
provisioner: csi.nodekit.io
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: csi, namespace: $NS}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: volumes-smoke-csi
  resources: {requests: {storage: 1Gi}}
YAML
  pod on-csi csi
  cases+=" on-csi"
else
  log "no CSI driver csi.nodekit.io (start the cluster with CSI_DRIVER=1): the hostPath case only"
fi
rc=0
for p in $cases; do
  restarted() {
    [ "$(kctl -n "$NS" get pod "$p" -o jsonpath='{.status.containerStatuses[0].restartCount}' 2>/dev/null)" -ge 1 ] 2>/dev/null &&
      [ "$(kctl -n "$NS" get pod "$p" -o jsonpath='{.status.containerStatuses[0].ready}')" = true ]
  }
  deadline=$(( $(date +%s) + 120 ))
  until restarted || [ "$(date +%s)" -ge "$deadline" ]; do sleep 1; done
  if restarted && kctl -n "$NS" logs "$p" | grep -q "found first run"; then
    log "PASS $p: the data written before the container restart is there after it ($(kctl -n "$NS" logs "$p"))"
  else
    log "FAIL $p: $(kctl -n "$NS" get pod "$p" -o wide 2>&1 | tail -1); events:"
    kctl -n "$NS" get events --field-selector involvedObject.name="$p" 2>&1 | tail -5
    rc=1
  fi
done
exit $rc

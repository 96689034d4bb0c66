#!/usr/bin/env bash
# up.sh — start a one-node Kubernetes v1.36.3 cluster on this machine:
#   etcd, kube-apiserver (127.0.0.1:$APISERVER_PORT), kube-controller-manager, kube-scheduler,
#   a read-only registry.k8s.io mirror of the locally built images (miniregistry, $REGISTRY_ADDR),
#   containerd v2.2.9 (+ Debian runc, bridge CNI), the images from images.sh, and the node agent.
# Waits until the node is Ready and writes $STATE/admin.kubeconfig.
#
# The node agent is the upstream kubelet unless NODE_AGENT_CMD is set. NODE_AGENT_CMD is run
# with `bash -c` (in its own process group, log $STATE/logs/node-agent.log) and gets the same
# identity and endpoints the kubelet gets, as environment variables:
#   NODE_NAME NODE_IP NODE_KUBECONFIG CRI_ENDPOINT KUBELET_CONFIG KUBELET_ROOT_DIR PKI
#   KUBELET_SERVING_CERT KUBELET_SERVING_KEY CLIENT_CA_FILE CLUSTER_DNS CLUSTER_DOMAIN STATE BIN LOGS
# The agent is restarted 5 s after it exits (like systemd Restart=always); NODE_AGENT_RESTART=0
# disables that. Exits are logged in $STATE/logs/node-agent-restarts.log.
# KUBELET_CGROUPS_PER_QOS / KUBELET_ENFORCE_NODE_ALLOCATABLE override those two settings
# (defaults true / [pods]; false makes the v1.36.3 kubelet panic on in-place resize).
# e.g. NODE_AGENT_CMD='exec /path/to/agent --kubeconfig "$NODE_KUBECONFIG" --node-name "$NODE_NAME" \
#        --runtime-endpoint "$CRI_ENDPOINT"' ./up.sh
# KUBELET_EXTRA_ARGS adds flags to the default kubelet command line; APISERVER_EXTRA_ARGS to the
# kube-apiserver's, CONTROLLER_MANAGER_EXTRA_ARGS to the controller-manager's (e.g. KWOK's CI
# settings, see hack/bench-cluster.sh); KUBE_SCHEDULER=0 leaves the scheduler out (pods then need
# spec.nodeName).
# CSI_DRIVER=1 also starts the harness's CSI driver (csi.nodekit.io) on the host.
# JOIN=1 (see common.sh) starts the node the way nodes join a cluster: the agent gets a
# bootstrap kubeconfig (BOOTSTRAP_KUBECONFIG, a bootstrap token), the path to write its
# kubeconfig to (NODE_KUBECONFIG) and CERT_DIR instead of certificates; KUBELET_CONFIG then
# sets rotateCertificates and serverTLSBootstrap, registers a PreferNoSchedule taint and
# reserves resources. The controller-manager approves and signs client certificates valid
# for JOIN_CERT_DURATION (default 20m: they rotate during a full run), a stand-in operator
# (csr-approver) approves the node's serving certificate requests, and the apiserver
# verifies the kubelet's serving certificate against the cluster CA.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"
T0=$(date +%s)
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl containerd containerd-shim-runc-v2 ctr e2eimages miniregistry; do
  [ -x "$BIN/$b" ] || die "$BIN/$b missing: run build.sh"
done
[ -x "$RUNC" ] || die "runc not found (apt-get install runc)"
mkdir -p "$LOGS" "$RUN"

"$HERE/pki.sh"

# ---------------------------------------------------------------- etcd
mkdir -p "$STATE/etcd"
start_bg etcd "$BIN/etcd" --name minicluster --data-dir "$STATE/etcd/data" \
  --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "minicluster=http://127.0.0.1:$ETCD_PEER_PORT" \
  --quota-backend-bytes 4294967296 --unsafe-no-fsync
wait_for etcd 60 curl -sf "http://127.0.0.1:$ETCD_CLIENT_PORT/health"

# ---------------------------------------------------------------- kube-apiserver
start_bg kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --allow-privileged=true \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --endpoint-reconciler-type=none \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  $( [ "$JOIN" = 1 ] && echo "--enable-bootstrap-token-auth --kubelet-certificate-authority=$PKI/ca.crt" ) \
  --profiling=false --v=1 ${APISERVER_EXTRA_ARGS:-}
wait_for kube-apiserver 120 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$APISERVER_URL/readyz"

# ---------------------------------------------------------------- controller-manager, scheduler
start_bg kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$STATE/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$STATE/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --use-service-account-credentials=true --controllers='*,bootstrapsigner,tokencleaner' \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --profiling=false --v=1 \
  $( [ "$JOIN" = 1 ] && echo "--cluster-signing-duration=${JOIN_CERT_DURATION:-20m}" ) ${CONTROLLER_MANAGER_EXTRA_ARGS:-}
[ "${KUBE_SCHEDULER:-1}" = 0 ] || start_bg kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig="$STATE/scheduler.kubeconfig" \
  --authentication-kubeconfig="$STATE/scheduler.kubeconfig" \
  --authorization-kubeconfig="$STATE/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false --profiling=false --v=1

# ---------------------------------------------------------------- containerd + CNI
mkdir -p "$CONTAINERD_DIR" "$STATE/cni/net.d" "$STATE/cni/ipam"
cat > "$STATE/cni/net.d/10-$CNI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {"type": "bridge", "bridge": "$CNI_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$STATE/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"}
  ]
}
EOF
eval "$("$BIN/e2eimages")"
mkdir -p "$CONTAINERD_DIR/certs.d/registry.k8s.io"
cat > "$CONTAINERD_DIR/certs.d/registry.k8s.io/hosts.toml" <<EOF
server = "https://registry.k8s.io"

[host."http://$REGISTRY_ADDR"]
  capabilities = ["pull", "resolve"]
EOF
cat > "$CONTAINERD_DIR/config.toml" <<EOF
version = 3
root = '$CONTAINERD_DIR/root'
state = '$CONTAINERD_DIR/state'
imports = []

[grpc]
  address = '$CRI_SOCKET'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '$PAUSE'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '$CONTAINERD_DIR/certs.d'

  [plugins.'io.containerd.cri.v1.runtime']
    # REQUIRED here: no CAP_SYS_RESOURCE, lowering oom_score_adj fails every sandbox otherwise
    restrict_oom_score_adj = true
    enable_unprivileged_ports = true
    enable_unprivileged_icmp = true
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    enable_cdi = false
    # keep pod network namespaces under the state dir instead of /var/run/netns
    netns_mounts_under_state_dir = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '$RUNC'
          SystemdCgroup = false
          Root = '$CONTAINERD_DIR/runc'
      # the handler the RuntimeClass e2e tests expect (as in upstream CI)
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.test-handler]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.test-handler.options]
          BinaryName = '$RUNC'
          SystemdCgroup = false
          Root = '$CONTAINERD_DIR/runc'
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '$STATE/cni/net.d'
      max_conf_num = 1

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'

  [plugins.'io.containerd.internal.v1.opt']
    path = '$CONTAINERD_DIR/opt'

  [plugins.'io.containerd.nri.v1.nri']
    disable = true
EOF
"$HERE/images.sh" build
# registry.k8s.io mirror serving exactly the locally built images (read-only), so that
# imagePullPolicy: Always and image volumes work without network
start_bg registry "$BIN/miniregistry" -addr "$REGISTRY_ADDR" -layouts "$STATE/registry/*" -strip registry.k8s.io
wait_for "registry mirror" 30 curl -sf "http://$REGISTRY_ADDR/v2/"
PATH=$BIN:$PATH start_bg containerd "$BIN/containerd" --config "$CONTAINERD_DIR/config.toml"
wait_for containerd 60 "$BIN/ctr" --address "$CRI_SOCKET" version
"$HERE/images.sh" import

# ---------------------------------------------------------------- join mode: token, RBAC, approver
if [ "$JOIN" = 1 ]; then
  token=$(cat "$PKI/bootstrap-token")
  # kubeadm's objects: the token's Secret, and the bindings that let its group request node
  # client certificates and have them approved, and let nodes renew their own.
  kctl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Secret
metadata: {name: bootstrap-token-${token%%.*}, namespace: kube-system}
type: bootstrap.kubernetes.io/token
stringData:
  token-id: ${token%%.*}
  token-secret: ${token#*.}
  usage-bootstrap-authentication: "true"
  auth-extra-groups: system:bootstrappers:minicluster
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: minicluster:kubelet-bootstrap}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:node-bootstrapper}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:bootstrappers:minicluster}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: minicluster:node-autoapprove-bootstrap}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:certificates.k8s.io:certificatesigningrequests:nodeclient}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:bootstrappers:minicluster}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: minicluster:node-autoapprove-certificate-rotation}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:certificates.k8s.io:certificatesigningrequests:selfnodeclient}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:nodes}]
EOF
  # A fresh join every time: no node kubeconfig or certificates from an earlier run, and no
  # Node object (labels and taints are set at registration only, as upstream).
  rm -rf "$NODE_KUBECONFIG" "$CERT_DIR"
  kctl delete node "$NODE_NAME" --ignore-not-found --wait=false >/dev/null
  # The operator's part: approve this node's serving certificate requests (nothing in the
  # control plane approves kubernetes.io/kubelet-serving CSRs). Logged in csr-approver.log.
  start_bg csr-approver "$HERE/csr-approver.sh"
fi

# ---------------------------------------------------------------- node agent
KUBELET_CONFIG=$KUBELET_DIR/config.yaml
KUBELET_CGROUPS_PER_QOS=${KUBELET_CGROUPS_PER_QOS:-true}
KUBELET_ENFORCE_NODE_ALLOCATABLE=${KUBELET_ENFORCE_NODE_ALLOCATABLE:-[pods]}
mkdir -p "$KUBELET_DIR/pki" "$KUBELET_DIR/pod-logs" "$KUBELET_DIR/manifests"
cat > "$KUBELET_CONFIG" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: Webhook
$( if [ "$JOIN" = 1 ]; then cat <<JOINEOF
rotateCertificates: true
serverTLSBootstrap: true
registerWithTaints: [{key: minicluster.nodekit.io/joined, value: "true", effect: PreferNoSchedule}]
systemReserved: {cpu: 100m, memory: 256Mi}
kubeReserved: {memory: 128Mi}
JOINEOF
else cat <<FILEEOF
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
rotateCertificates: false
serverTLSBootstrap: false
FILEEOF
fi )
containerRuntimeEndpoint: $CRI_ENDPOINT
cgroupDriver: cgroupfs
# this sandbox: cgroup v1 (the kubelet refuses it by default since 1.35), no systemd
failCgroupV1: false
# default true. false (no pod-level cgroups) makes the v1.36.3 kubelet PANIC on in-place pod resize
# (nil deref in doPodResizeAction: podContainerManagerNoop.GetPodCgroupConfig returns nil, nil)
cgroupsPerQOS: $KUBELET_CGROUPS_PER_QOS
enforceNodeAllocatable: $KUBELET_ENFORCE_NODE_ALLOCATABLE
failSwapOn: false
clusterDNS: [$CLUSTER_DNS]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: $KUBELET_DIR/pod-logs
staticPodPath: $KUBELET_DIR/manifests
EOF
export NODE_NAME NODE_IP NODE_KUBECONFIG CRI_ENDPOINT KUBELET_CONFIG STATE BIN PKI CLUSTER_DNS LOGS
export JOIN BOOTSTRAP_KUBECONFIG CERT_DIR
export KUBELET_ROOT_DIR=$KUBELET_DIR CLUSTER_DOMAIN=cluster.local CLIENT_CA_FILE=$PKI/ca.crt
export KUBELET_SERVING_CERT=$PKI/kubelet-serving.crt KUBELET_SERVING_KEY=$PKI/kubelet-serving.key
if [ -n "${NODE_AGENT_CMD:-}" ]; then
  log "node agent: NODE_AGENT_CMD=$NODE_AGENT_CMD"
  agent=(bash -c "$NODE_AGENT_CMD")
else
  # shellcheck disable=SC2206
  agent=("$BIN/kubelet" --config="$KUBELET_CONFIG" --kubeconfig="$NODE_KUBECONFIG"
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP"
    --root-dir="$KUBELET_DIR" --cert-dir="$CERT_DIR" --v=2 ${KUBELET_EXTRA_ARGS:-})
  if [ "$JOIN" = 1 ]; then
    agent+=(--bootstrap-kubeconfig="$BOOTSTRAP_KUBECONFIG" --node-labels=minicluster.nodekit.io/joined=true)
  fi
fi
# Like systemd's Restart=always for kubelet.service: a crashed agent is restarted after
# NODE_AGENT_RESTART_SEC; every exit is recorded in $LOGS/node-agent-restarts.log
# (conformance.sh reports the count). NODE_AGENT_RESTART=0 runs it once.
if [ "${NODE_AGENT_RESTART:-1}" = 1 ]; then
  start_bg node-agent bash -c 'while true; do "$@"; rc=$?
      echo "$(date -Is) node agent exited rc=$rc; restarting in ${NODE_AGENT_RESTART_SEC:-5}s" >> "$LOGS/node-agent-restarts.log"
      sleep "${NODE_AGENT_RESTART_SEC:-5}"; done' node-agent-supervisor "${agent[@]}"
else
  start_bg node-agent "${agent[@]}"
fi
node_ready() {
  [ "$(kctl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
wait_for "node $NODE_NAME Ready" 180 node_ready
wait_for "default ServiceAccount" 60 kctl -n default get serviceaccount default
# CSI_DRIVER=1: the harness's CSI driver (examples/csi-hostdir, built by run.sh into
# $BIN/csi-hostdir) on the host, registered with the agent through its plugins_registry.
if [ "${CSI_DRIVER:-0}" = 1 ]; then
  [ -x "$BIN/csi-hostdir" ] || die "$BIN/csi-hostdir missing: run.sh builds it (CSI_DRIVER=1)"
  start_bg csi-hostdir "$BIN/csi-hostdir" --name csi.nodekit.io --root-dir "$KUBELET_DIR" \
    --data-dir "$STATE/csi-hostdir" --kubeconfig "$ADMIN_KUBECONFIG" --node-name "$NODE_NAME"
  csi_registered() {
    [ -n "$(kctl get csinode "$NODE_NAME" -o jsonpath='{.spec.drivers[?(@.name=="csi.nodekit.io")].nodeID}' 2>/dev/null)" ]
  }
  wait_for "CSI driver csi.nodekit.io registered with the node agent" 60 csi_registered
fi
log "cluster up in $(( $(date +%s) - T0 )) s; KUBECONFIG=$ADMIN_KUBECONFIG"
kctl get nodes -o wide

# common.sh — settings shared by the minicluster scripts (source it, do not run it).
# Every value can be overridden from the environment.
STATE=${STATE:-${TMPDIR:-/tmp}/minicluster}
BIN=${BIN:-$STATE/bin}
LOGS=$STATE/logs
RUN=$STATE/run            # pid files, one per started process
PKI=$STATE/pki
export PATH=$BIN:/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin

NODE_NAME=${NODE_NAME:-mc-node}
# The kubelet refuses a loopback node IP, so the node uses the address of the
# default-route interface; the control plane itself listens on 127.0.0.1 only.
NODE_IP=${NODE_IP:-$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')}

ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT:-12379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-12380}
APISERVER_PORT=${APISERVER_PORT:-6443}
APISERVER_URL=https://127.0.0.1:$APISERVER_PORT
SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/16}
KUBERNETES_SVC_IP=${KUBERNETES_SVC_IP:-10.96.0.1}
CLUSTER_DNS=${CLUSTER_DNS:-10.96.0.10}
POD_CIDR=${POD_CIDR:-10.88.0.0/16}
CNI_BRIDGE=${CNI_BRIDGE:-mc0}
CNI_NETWORK=${CNI_NETWORK:-minicluster}

REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:5001}   # local registry.k8s.io mirror (miniregistry)
CONTAINERD_DIR=$STATE/containerd
CRI_SOCKET=$CONTAINERD_DIR/containerd.sock
CRI_ENDPOINT=unix://$CRI_SOCKET
RUNC=${RUNC:-$(command -v runc || echo /usr/sbin/runc)}

KUBELET_DIR=$STATE/kubelet
ADMIN_KUBECONFIG=$STATE/admin.kubeconfig
# JOIN=1: the node joins as nodes join (up.sh): a bootstrap token requests its client
# certificate (approved and signed by the controller-manager, short-lived so that it rotates
# during a run), its serving certificate is requested from the cluster (approved by a
# stand-in operator, csr-approver), and the apiserver verifies the kubelet's certificate.
JOIN=${JOIN:-0}
BOOTSTRAP_KUBECONFIG=$STATE/bootstrap-kubelet.kubeconfig
CERT_DIR=$KUBELET_DIR/pki
if [ "$JOIN" = 1 ]; then
  NODE_KUBECONFIG=$KUBELET_DIR/kubeconfig   # written by the node agent when it bootstraps
else
  NODE_KUBECONFIG=$STATE/node.kubeconfig
fi

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# start_bg NAME CMD... — start CMD in the background (own process group),
# stdout+stderr to $LOGS/NAME.log, pid to $RUN/NAME.pid
start_bg() {
  local name=$1; shift
  mkdir -p "$RUN" "$LOGS"
  if [ -f "$RUN/$name.pid" ] && kill -0 "$(cat "$RUN/$name.pid")" 2>/dev/null; then
    log "$name already running (pid $(cat "$RUN/$name.pid"))"; return 0
  fi
  [ -f "$LOGS/$name.log" ] && mv -f "$LOGS/$name.log" "$LOGS/$name.log.prev"
  setsid "$@" >"$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! > "$RUN/$name.pid"
  log "started $name pid $! (log $LOGS/$name.log)"
}

# stop_bg NAME [TIMEOUT_S] — SIGTERM the process group started by start_bg, SIGKILL after TIMEOUT_S
stop_bg() {
  local name=$1 timeout=${2:-20} pid
  [ -f "$RUN/$name.pid" ] || return 0
  pid=$(cat "$RUN/$name.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    local i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt $((timeout * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name (pid $pid) did not stop in ${timeout}s: SIGKILL"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
    fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$RUN/$name.pid"
}

# wait_for DESC TIMEOUT_S CMD... — poll CMD every 0.5 s
wait_for() {
  local desc=$1 timeout=$2; shift 2
  local t0=$(date +%s%N)
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge "$deadline" ] && die "timed out after ${timeout}s waiting for $desc"
    sleep 0.5
  done
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  log "$desc ready after $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s"
}

kctl() { "$BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }
ctr_() { "$BIN/ctr" --address "$CRI_SOCKET" -n k8s.io "$@" 2>>"$LOGS/ctr.log"; }

# select_agent AGENT — the node agent up.sh starts: "kubelet" (the upstream kubelet, built by
# build.sh) or "nodekit" (the reference agent, built here from ../examples/kubelet into
# $BIN/nodekit-agent and started with the kubelet's flags through NODE_AGENT_CMD).
select_agent() {
  case $1 in
  kubelet) unset NODE_AGENT_CMD ;;
  nodekit)
    log "building the reference agent"
    (cd "$(dirname "${BASH_SOURCE[0]}")/.." && go build -tags grpcnotrace -o "$BIN/nodekit-agent" ./examples/kubelet)
    local cmd='exec "$BIN/nodekit-agent" --config "$KUBELET_CONFIG" --kubeconfig "$NODE_KUBECONFIG"'
    cmd+=' --node-name "$NODE_NAME" --node-ip "$NODE_IP" --root-dir "$KUBELET_ROOT_DIR" --cert-dir "$CERT_DIR" --v=2'
    if [ "$JOIN" = 1 ]; then
      cmd+=' --bootstrap-kubeconfig "$BOOTSTRAP_KUBECONFIG" --node-labels minicluster.nodekit.io/joined=true'
    fi
    export NODE_AGENT_CMD=$cmd ;;
  *) die "AGENT=$1: want nodekit or kubelet" ;;
  esac
}

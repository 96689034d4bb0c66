#!/usr/bin/env bash
# bench-cluster.sh — side-by-side measurements (make bench-cluster; root; needs the conformance
# cluster's binaries: conformance/build.sh and images.sh run once, as make conformance does).
#
#  1. the reference agent (examples/kubelet) against the upstream kubelet v1.36.3, each in turn
#     the node agent of the conformance cluster (etcd, kube-apiserver, controller-manager,
#     scheduler, containerd), state purged between them: $PODS pods start, $STEADY of steady
#     state, $PODS deletions. Each agent talks to the API server and to containerd through
#     counting proxies (benchcluster proxy), so requests, bytes and CRI calls are counted the
#     same way for both; CPU and RSS come from /proc of the agent's process.
#  2. examples/virtualnodes against KWOK v0.8.0 (built from the module proxy) on the same
#     kube-apiserver: $VNODES nodes and $VPODS pods under each in turn, $VSTEADY of steady state.
#  3. (PARTS=kwokci, not in the default) KWOK's own CI benchmark shape for both: $CINODES nodes
#     (5,000), $CIPODS pods (10,000) created 64 at a time on one node, then deleted with their
#     grace period and timed until every one is gone; on a fresh cluster set up as kwokctl sets up
#     KWOK's CI cluster (API server flags, no scheduler, heartbeats CI_HEARTBEAT_FACTOR times the
#     kubelet's intervals).
#
# Each part runs RUNS times (default 3), the agents interleaved (kubelet, nodekit, kubelet, …), and
# the report gives the median of each figure and the median and range of the per-run ratios.
# RATE (pods per second, default 5: clusterloader2's node-throughput shape; 0: 10 at a time) paces
# the pod creations; each agent's own pod start SLI (kubelet_pod_start_sli_duration_seconds) is read
# from its /metrics after the start phase.
# Results: $OUT/*.json and $OUT/report.md (the README's tables). The cluster is left down.
# Settings (env): CONFORMANCE_DIR STATE OUT PODS STEADY VNODES VPODS VSTEADY CINODES CIPODS RUNS RATE
#   CI_APISERVER_ARGS (the API server's flags for PARTS=kwokci; default KWOK's CI's, set empty for none)
#   CI_HEARTBEAT_FACTOR (PARTS=kwokci: node lease duration 40 s, status update 10 s and the
#   controller-manager's node monitor grace period 40 s and period 5 s times this; default 5,
#   kwokctl's --heartbeat-factor default, which KWOK's CI runs with; 1 for the kubelet's)
#   PARTS (default "agents vnodes") AGENTS (default "kubelet nodekit") VAGENTS (default "virtualnodes kwok")
#   VNODES_EXTRA AGENT_EXTRA (more flags for virtualnodes, the reference agent)
#   VNODES_WRAP (a prefix of virtualnodes' many-node command, e.g. "env GODEBUG=memprofilerate=1 "
#   with VNODES_EXTRA="--profiling-address 127.0.0.1:6060" for an exact heap profile; not for figures)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFORMANCE_DIR=${CONFORMANCE_DIR:-$ROOT/conformance}
GO=${GO:-$(command -v go)}
PODS=${PODS:-100}
STEADY=${STEADY:-10m}
VNODES=${VNODES:-1000}
VPODS=${VPODS:-10000}
VSTEADY=${VSTEADY:-3m}
CINODES=${CINODES:-5000}
CIPODS=${CIPODS:-10000}
CI_APISERVER_ARGS=${CI_APISERVER_ARGS---max-requests-inflight=0 --max-mutating-requests-inflight=0 --enable-priority-and-fairness=false}
CI_HEARTBEAT_FACTOR=${CI_HEARTBEAT_FACTOR:-5}
RUNS=${RUNS:-3}
RATE=${RATE:-5}
PARTS=${PARTS:-agents vnodes}
AGENTS=${AGENTS:-kubelet nodekit}
VAGENTS=${VAGENTS:-virtualnodes kwok}
KWOK_VERSION=v0.8.0

[ "$(id -u)" = 0 ] || { echo "bench-cluster: run as root (the cluster runs containerd)" >&2; exit 1; }
[ -f "$CONFORMANCE_DIR/common.sh" ] || { echo "bench-cluster: no conformance scripts at $CONFORMANCE_DIR (set CONFORMANCE_DIR)" >&2; exit 1; }
# shellcheck source=/dev/null
. "$CONFORMANCE_DIR/common.sh"
[ -x "$BIN/kubelet" ] || die "$BIN/kubelet missing: run $CONFORMANCE_DIR/build.sh and images.sh first"
OUT=${OUT:-$STATE/report/bench-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT/bin"
B=$OUT/bin/benchcluster

log "building the agents and the harness into $OUT/bin"
# grpcnotrace as make build (Makefile: BUILDTAGS): the executables users get from make.
(cd "$ROOT" && "$GO" build -tags grpcnotrace -o "$OUT/bin/nodekit-agent" ./examples/kubelet && "$GO" build -tags grpcnotrace -o "$OUT/bin/virtualnodes" ./examples/virtualnodes)
(cd "$ROOT/test" && "$GO" build -o "$B" ./cmd/benchcluster)
GOBIN=$OUT/bin GOFLAGS= "$GO" install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
KWOK_DIR=$(GOFLAGS= "$GO" mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
# KWOK's "fast" stages (its kwokctl default): nodes Ready at once, pods Running and Ready at once.
for f in node/fast/node-initialize.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  cat "$KWOK_DIR/kustomize/stage/$f"; echo '---'
done > "$OUT/kwok-stages.yaml"

NODEKIT_VERSION=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo dev)
KUBELET_VERSION=$("$BIN/kubelet" --version | awk '{print $2}')
{
  echo "date: $(date -u +%Y-%m-%d)"
  echo "machine: $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr)"
  echo "versions: kubelet $KUBELET_VERSION, nodekit $NODEKIT_VERSION, KWOK $KWOK_VERSION, containerd $("$BIN/containerd" --version | awk '{print $3}'), $("$GO" version | awk '{print $3}')"
} > "$OUT/env.txt"
cat "$OUT/env.txt"

# run_agent NAME VERSION CMD: a purged cluster with CMD as the node agent behind the proxies, then the workload.
run_agent() {
  local name=$1 version=$2 cmd=$3
  log "== $name: fresh cluster"
  "$CONFORMANCE_DIR/down.sh" --purge > "$OUT/$name-down.log" 2>&1 || true
  export BENCH_NODE_KUBECONFIG=$OUT/$name-node.kubeconfig BENCH_CRI_SOCKET=$OUT/$name-cri.sock
  "$B" proxy --listen 127.0.0.1:16443 --upstream-kubeconfig "$NODE_KUBECONFIG" --kubeconfig-out "$BENCH_NODE_KUBECONFIG" \
    --cri-listen "$BENCH_CRI_SOCKET" --cri-upstream "$CRI_SOCKET" --stats 127.0.0.1:16444 > "$OUT/$name-proxy.log" 2>&1 &
  local proxy=$!
  NODE_AGENT_CMD=$cmd "$CONFORMANCE_DIR/up.sh" > "$OUT/$name-up.log" 2>&1 || { tail -20 "$OUT/$name-up.log"; kill $proxy; die "$name: cluster did not come up"; }
  log "== $name: workload ($PODS pods, $STEADY steady)"
  "$B" agent --kubeconfig "$ADMIN_KUBECONFIG" --name "${name%-*}" --version "$version" --supervisor-pid-file "$RUN/node-agent.pid" \
    --stats http://127.0.0.1:16444/stats --pods "$PODS" --rate "$RATE" --node "$NODE_NAME" --steady "$STEADY" \
    --out "$OUT/$name.json" || { kill $proxy; die "$name: workload failed"; }
  cp "$LOGS/node-agent.log" "$OUT/$name-agent.log" 2>/dev/null || true
  kill $proxy; wait $proxy 2>/dev/null || true
}

if [[ " $PARTS " == *" agents "* ]]; then
for run in $(seq 1 "$RUNS"); do
  # The kubelet exactly as up.sh runs it by default, but for the kubeconfig and the runtime endpoint (the proxies).
  if [[ " $AGENTS " == *" kubelet "* ]]; then
  run_agent "kubelet-$run" "$KUBELET_VERSION" 'exec "$BIN/kubelet" --config="$KUBELET_CONFIG" --kubeconfig="$BENCH_NODE_KUBECONFIG" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --root-dir="$KUBELET_ROOT_DIR" --cert-dir="$KUBELET_ROOT_DIR/pki" \
    --container-runtime-endpoint="unix://$BENCH_CRI_SOCKET" --v=2'
  fi
  if [[ " $AGENTS " == *" nodekit "* ]]; then
  export BENCH_AGENT=$OUT/bin/nodekit-agent
  run_agent "nodekit-$run" "$NODEKIT_VERSION" 'exec "$BENCH_AGENT" --kubeconfig "$BENCH_NODE_KUBECONFIG" --node-name "$NODE_NAME" \
    --node-ip "$NODE_IP" --container-runtime-endpoint "unix://$BENCH_CRI_SOCKET" --tls-cert-file "$KUBELET_SERVING_CERT" \
    --tls-private-key-file "$KUBELET_SERVING_KEY" --client-ca-file "$CLIENT_CA_FILE" --root-dir "$KUBELET_ROOT_DIR" \
    --pod-logs-dir "$KUBELET_ROOT_DIR/pod-logs" --pod-manifest-path "$KUBELET_ROOT_DIR/manifests" \
    --cluster-dns "$CLUSTER_DNS" --cluster-domain "$CLUSTER_DOMAIN" --v=2 ${AGENT_EXTRA:-}'
  fi
done
fi

if [[ " $PARTS " == *" vnodes "* ]]; then
  if ! curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$APISERVER_URL/readyz" > /dev/null 2>&1; then
    log "== starting the cluster for the many-node part"
    "$CONFORMANCE_DIR/down.sh" --purge > "$OUT/vnodes-down.log" 2>&1 || true
    "$CONFORMANCE_DIR/up.sh" > "$OUT/vnodes-up.log" 2>&1 || die "cluster did not come up"
  fi
  for run in $(seq 1 "$RUNS"); do
  if [[ " $VAGENTS " == *" virtualnodes "* ]]; then
  log "== virtualnodes (run $run): $VNODES nodes, $VPODS pods, $VSTEADY steady"
  "$B" vnodes --kubeconfig "$ADMIN_KUBECONFIG" --name virtualnodes --version "$NODEKIT_VERSION" --work-dir "$OUT" \
    --command "${VNODES_WRAP:-}$OUT/bin/virtualnodes --kubeconfig \$KUBECONFIG --nodes $VNODES --node-prefix bvn- --port 0 --ready-delay 0s ${VNODES_EXTRA:-}" \
    --node-prefix bvn- --node-selector virtualnodes.nodekit.io/virtual=true \
    --nodes "$VNODES" --pods "$VPODS" --steady "$VSTEADY" --out "$OUT/virtualnodes-$run.json"
  fi
  if [[ " $VAGENTS " == *" kwok "* ]]; then
  log "== KWOK (run $run): $VNODES nodes, $VPODS pods, $VSTEADY steady"
  "$B" vnodes --kubeconfig "$ADMIN_KUBECONFIG" --name kwok --version "$KWOK_VERSION" --work-dir "$OUT" --create-nodes \
    --command "$OUT/bin/kwok --kubeconfig \$KUBECONFIG --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --config $OUT/kwok-stages.yaml --node-lease-duration-seconds 40" \
    --node-prefix bkw- --node-selector type=kwok \
    --nodes "$VNODES" --pods "$VPODS" --steady "$VSTEADY" --out "$OUT/kwok-$run.json"
  fi
  done
fi
if [[ " $PARTS " == *" kwokci "* ]]; then
  # KWOK's CI creates its cluster with kwokctl --disable-qps-limits --disable-kube-scheduler and
  # kwokctl's default --heartbeat-factor 5: the API server without in-flight limits or priority
  # and fairness (CI_APISERVER_ARGS, empty for this cluster's defaults), no scheduler, node
  # leases of 200 s renewed every 50 s, node status every 50 s, and a controller-manager that
  # waits 200 s for a node's heartbeat (CI_HEARTBEAT_FACTOR). A fresh cluster set up so.
  f=$CI_HEARTBEAT_FACTOR
  [[ "$f" =~ ^[1-9][0-9]*$ ]] || die "CI_HEARTBEAT_FACTOR=$f: want a positive integer"
  log "== starting the cluster for KWOK's CI shape (API server flags: ${CI_APISERVER_ARGS:-none}; heartbeat factor $f)"
  "$CONFORMANCE_DIR/down.sh" --purge > "$OUT/kwokci-down.log" 2>&1 || true
  APISERVER_EXTRA_ARGS="$CI_APISERVER_ARGS" KUBE_SCHEDULER=0 \
    CONTROLLER_MANAGER_EXTRA_ARGS="--node-monitor-grace-period=$((40 * f))s --node-monitor-period=$((5 * f))s" \
    "$CONFORMANCE_DIR/up.sh" > "$OUT/kwokci-up.log" 2>&1 || die "cluster did not come up"
  # No counting proxy between the program and the API server (--direct): KWOK's CI has none, and
  # on 2 cores its second TLS hop takes a quarter of a core from the API server.
  ci=(--nodes "$CINODES" --pods "$CIPODS" --pods-on-one-node --create-parallel 64 --timed-delete --settle 5s --steady 30s --direct)
  for run in $(seq 1 "$RUNS"); do
  if [[ " $VAGENTS " == *" virtualnodes "* ]]; then
  log "== virtualnodes, KWOK's CI shape (run $run): $CINODES nodes, $CIPODS pods on one node"
  "$B" vnodes --kubeconfig "$ADMIN_KUBECONFIG" --name virtualnodes --version "$NODEKIT_VERSION" --work-dir "$OUT" \
    --command "$OUT/bin/virtualnodes --kubeconfig \$KUBECONFIG --nodes $CINODES --pods $CIPODS --qps 1000 --node-prefix bvn- --port 0 --ready-delay 0s --node-lease-duration-seconds $((40 * f)) --node-status-update-frequency $((10 * f))s ${VNODES_EXTRA:-}" \
    --node-prefix bvn- --node-selector virtualnodes.nodekit.io/virtual=true "${ci[@]}" --out "$OUT/kwokci-virtualnodes-$run.json"
  fi
  if [[ " $VAGENTS " == *" kwok "* ]]; then
  log "== KWOK, its CI shape (run $run): $CINODES nodes, $CIPODS pods on one node"
  "$B" vnodes --kubeconfig "$ADMIN_KUBECONFIG" --name kwok --version "$KWOK_VERSION" --work-dir "$OUT" --create-nodes \
    --command "$OUT/bin/kwok --kubeconfig \$KUBECONFIG --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --config $OUT/kwok-stages.yaml --node-lease-duration-seconds $((40 * f))" \
    --node-prefix bkw- --node-selector type=kwok "${ci[@]}" --out "$OUT/kwokci-kwok-$run.json"
  fi
  done
fi
"$CONFORMANCE_DIR/down.sh" > "$OUT/final-down.log" 2>&1 || true

args=(--header "Measured $(sed -n 's/^date: //p' "$OUT/env.txt") on $(sed -n 's/^machine: //p' "$OUT/env.txt"); $(sed -n 's/^versions: //p' "$OUT/env.txt").")
runs() { local f=() r; for r in $(seq 1 "$RUNS"); do [ -f "$OUT/$1-$r.json" ] && f+=("$OUT/$1-$r.json"); done; (IFS=,; echo "${f[*]}"); }
k=$(runs kubelet) a=$(runs nodekit) kw=$(runs kwok) vn=$(runs virtualnodes)
[ -n "$k" ] && [ -n "$a" ] && args+=(--kubelet "$k" --agent "$a")
[ -n "$kw" ] && [ -n "$vn" ] && args+=(--virtualnodes "$vn" --kwok "$kw")
cik=$(runs kwokci-kwok) civ=$(runs kwokci-virtualnodes)
[ -n "$cik" ] && [ -n "$civ" ] && args+=(--kwokci-virtualnodes "$civ" --kwokci-kwok "$cik")
"$B" report "${args[@]}" | tee "$OUT/report.md"
log "report: $OUT/report.md"

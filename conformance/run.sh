#!/usr/bin/env bash
# run.sh — `make conformance`: the upstream e2e suite against nodekit's reference agent (or the
# upstream kubelet) on a one-node cluster on this machine, and the comparison with the kubelet's
# baseline. As root, on Linux; the first run builds the cluster's binaries (~30 min on 2 cores).
#
#   AGENT=nodekit   the reference agent, built from ../examples/kubelet (default)
#   AGENT=kubelet   the upstream kubelet v1.36.3 (to re-measure the baseline)
#   JOIN=1          the node joins with a bootstrap token and rotating certificates (see up.sh)
#   SET=conformance the 290 sig-node Conformance and NodeConformance specs (default)
#   SET=sig-node    every [sig-node] spec that is not Serial, Disruptive, Flaky, Slow or behind a
#                   [Feature:] label (388 in v1.36.3)
#   FOCUS, SKIP, PROCS, TIMEOUT, RUN_NAME   as conformance.sh (override the set's focus)
# The run is compared with baseline-upstream-kubelet[-SET].tsv; with AGENT=kubelet the run's
# results are also written as a baseline candidate ($STATE/report/RUN/baseline.tsv).
#   KEEP=1          leave the cluster running afterwards (default: down.sh)
#
# Every agent reads the same KubeletConfiguration file (up.sh writes it): the reference agent
# gets --config plus the flags the kubelet gets.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"
AGENT=${AGENT:-nodekit}
SET=${SET:-conformance}
case $SET in
conformance) BASELINE=$HERE/baseline-upstream-kubelet.tsv ;;
sig-node)
  export FOCUS=${FOCUS:-'\[sig-node\]'} SKIP=${SKIP:-'\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:'}
  BASELINE=$HERE/baseline-upstream-kubelet-sig-node.tsv ;;
*) die "SET=$SET: want conformance or sig-node" ;;
esac
[ "$(id -u)" = 0 ] || die "run as root: the cluster runs containerd and mounts volumes"
if [ ! -x "$BIN/e2e.test" ] || [ ! -x "$BIN/kubelet" ]; then
  log "building the cluster's binaries into $BIN (first time: ~30 min on 2 cores)"
  "$HERE/build.sh"
fi
[ -d "$STATE/registry" ] || "$HERE/images.sh" build
case $AGENT in
kubelet) unset NODE_AGENT_CMD ;;
nodekit)
  log "building the reference agent"
  (cd "$HERE/.." && go build -o "$BIN/nodekit-agent" ./examples/kubelet)
  cmd='exec "$BIN/nodekit-agent" --config "$KUBELET_CONFIG" --kubeconfig "$NODE_KUBECONFIG"'
  cmd+=' --node-name "$NODE_NAME" --node-ip "$NODE_IP" --root-dir "$KUBELET_ROOT_DIR" --cert-dir "$CERT_DIR" --v=2'
  if [ "$JOIN" = 1 ]; then
    cmd+=' --bootstrap-kubeconfig "$BOOTSTRAP_KUBECONFIG" --node-labels minicluster.nodekit.io/joined=true'
  fi
  export NODE_AGENT_CMD=$cmd ;;
*) die "AGENT=$AGENT: want nodekit or kubelet" ;;
esac
"$HERE/down.sh"
"$HERE/up.sh"
export RUN_NAME=${RUN_NAME:-$AGENT-$SET$( [ "$JOIN" = 1 ] && echo -join )-$(date +%Y%m%d-%H%M%S)}
rc=0
"$HERE/conformance.sh" || rc=$?
results=$STATE/report/$RUN_NAME/results.tsv
if [ -f "$results" ]; then
  if [ "$AGENT" = kubelet ]; then
    awk -F'\t' '$1 != "skipped" && $1 != "filtered-out" && $1 != "pending" {print $1 "\t" $3}' "$results" | sort -t"$(printf '\t')" -k2 \
      > "$STATE/report/$RUN_NAME/baseline.tsv"
    log "baseline candidate: $STATE/report/$RUN_NAME/baseline.tsv (copy it to $BASELINE to adopt it)"
  fi
  if [ -f "$BASELINE" ]; then
    BASELINE=$BASELINE "$HERE/compare.sh" "$results" | tee "$STATE/report/$RUN_NAME/compare.txt"
  else
    log "no baseline $BASELINE yet: measure it with AGENT=kubelet SET=$SET"
  fi
fi
[ "${KEEP:-0}" = 1 ] || "$HERE/down.sh"
exit $rc

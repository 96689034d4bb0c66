#!/usr/bin/env bash
# statuses.sh — `make statuses`: the pod statuses the node agent writes, side by side with the
# upstream kubelet's, for the pods of ../test/integration/testdata/statuses/pods.yaml (running,
# unready, succeeded and failed under Never and OnFailure, a crash loop, init containers done and
# failed, a sidecar, a missing configMap, a missing image) on the one-node cluster.
#
#   AGENTS="kubelet nodekit"  the agents, in order (default both); each on a purged cluster
#   SETTLE=60                 seconds after the last pod leaves ContainerCreating before capture
#   UPDATE=1                  copy the kubelet's capture to the test module's testdata
#                             (kubelet.json, which TestPodStatusesMatchKubelet compares the agent
#                             on the CRI simulator with, in `make test`)
#
# Each agent's `kubectl get pods -o json` goes to $STATE/report/statuses-<time>/<agent>.json, its
# Node's to <agent>-node.json.
# The verdict is the test module's own comparison (the same normalization as in make test: times,
# IDs, IPs and the runtime's pull messages masked) of the last agent's capture with the first's:
# exit status 0 only when every pod's status and the Node are the kubelet's field for field (the
# Node's differences the agent documents are listed by the test, not hidden).
# As root, with the cluster's binaries built (build.sh, images.sh).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"
AGENTS=${AGENTS:-kubelet nodekit}
SETTLE=${SETTLE:-60}
NS=statuses
TESTDATA=$HERE/../test/integration/testdata/statuses
OUT=$STATE/report/statuses-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
[ "$(id -u)" = 0 ] || die "run as root: the cluster runs containerd"
[ -x "$BIN/kubelet" ] && [ -x "$BIN/kube-apiserver" ] || die "build the cluster first: $HERE/build.sh"
[ -d "$STATE/registry" ] || "$HERE/images.sh" build
eval "$("$BIN/e2eimages")"   # BUSYBOX=…
MISSING_IMAGE=${BUSYBOX%%/*}/nodekit/no-such-image:1

capture() {
  local agent=$1
  select_agent "$agent"
  "$HERE/down.sh" --purge
  "$HERE/up.sh"
  kctl create namespace "$NS"
  kctl -n "$NS" create serviceaccount default 2>/dev/null || true
  sed -e "s|@IMAGE@|$BUSYBOX|g" -e "s|@MISSING_IMAGE@|$MISSING_IMAGE|g" -e "s|@NODE@|$NODE_NAME|g" \
    "$TESTDATA/pods.yaml" | kctl -n "$NS" apply -f -
  # started: every pod has a status for each of its containers, none still being created
  started() { kctl -n "$NS" get pods -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    if p["status"].get("phase") in ("Succeeded", "Failed"): continue
    st = p["status"].get("containerStatuses", [])
    if len(st) < len(p["spec"]["containers"]): sys.exit(1)
    for c in st + p["status"].get("initContainerStatuses", []):
        if c["state"].get("waiting", {}).get("reason") in ("ContainerCreating", "PodInitializing"): sys.exit(1)'; }
  ( wait_for "pods started ($agent)" 180 started ) || true
  sleep "$SETTLE"
  kctl -n "$NS" get pods -o json > "$OUT/$agent.json"
  kctl get node "$NODE_NAME" -o json > "$OUT/$agent-node.json"
  kctl -n "$NS" get pods -o wide > "$OUT/$agent.txt" 2>&1 || true
  log "$agent: captured $(grep -c '"kind": "Pod"' "$OUT/$agent.json") pods into $OUT/$agent.json"
}

for a in $AGENTS; do capture "$a"; done
[ "${KEEP:-0}" = 1 ] || "$HERE/down.sh" --purge

set -- $AGENTS
first=$1; last=${!#}
if [ "${UPDATE:-0}" = 1 ] && [ "$first" = kubelet ]; then
  cp "$OUT/kubelet.json" "$TESTDATA/kubelet.json"
  log "updated $TESTDATA/kubelet.json"
fi
[ "$first" != "$last" ] || exit 0
log "comparing $last with $first (TestPodStatusesMatchKubelet on the captures)"
cd "$HERE/../test"
STATUSES_WANT="$OUT/$first.json" STATUSES_GOT="$OUT/$last.json" \
  STATUSES_WANT_NODE="$OUT/$first-node.json" STATUSES_GOT_NODE="$OUT/$last-node.json" \
  go test -count=1 -v -run 'TestPodStatusesMatchKubelet$|TestNodeMatchesKubelet$' ./integration/ 2>&1 |
  grep -v '^[IWE][0-9]\{4\} ' | tee "$OUT/verdict.txt"
exit "${PIPESTATUS[0]}"

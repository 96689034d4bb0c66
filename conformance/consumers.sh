#!/usr/bin/env bash
# consumers.sh — `make consumers`: what real monitoring consumers read from the node agent, on the
# one-node cluster, for the upstream kubelet and for the reference agent, side by side.
#
#   1. metrics-server v0.8.0 (built from the module proxy, run on the host and registered as the
#      aggregated API v1beta1.metrics.k8s.io): `kubectl top node` and `kubectl top pod` must show
#      CPU and memory for the node and for a pod on it, and a HorizontalPodAutoscaler on CPU must
#      scale a CPU-bound deployment above one replica.
#   2. Prometheus (Debian's package) with kube-prometheus' kubelet scrape configuration
#      (consumers/prometheus.yml.in): every target (/metrics, /metrics/cadvisor, /metrics/probes,
#      /metrics/slis) is scraped, then every query of consumers/kubelet-queries.tsv (the
#      kubernetes-mixin kubelet dashboard, its alerts and recording rules, and the cAdvisor
#      queries of its compute-resources dashboards) is evaluated.
#
#   AGENTS="kubelet nodekit"  the agents to measure, in order (default both); the verdict compares
#                             the last with the first: every query that returns data under the
#                             first must return data under the last
#   KEEP=1                    leave the last cluster running (default: down.sh --purge)
#
# Results: $STATE/report/consumers-<time>/{<agent>-queries.tsv,<agent>-top.txt,verdict.txt}.
# Exit status 0 only when every agent passes step 1 and the last agent misses no query the first
# answers. As root, with the cluster's binaries built (build.sh, images.sh).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"
AGENTS=${AGENTS:-kubelet nodekit}
OUT=$STATE/report/consumers-$(date +%Y%m%d-%H%M%S)
MS_PORT=${MS_PORT:-4443}
PROM_PORT=${PROM_PORT:-9091}
NS=consumers
mkdir -p "$OUT"
[ "$(id -u)" = 0 ] || die "run as root: the cluster runs containerd"
[ -x "$BIN/kubelet" ] && [ -x "$BIN/kube-apiserver" ] || die "build the cluster first: $HERE/build.sh"
[ -d "$STATE/registry" ] || "$HERE/images.sh" build
eval "$("$BIN/e2eimages")"   # BUSYBOX=…

# ---------------------------------------------------------------- the consumers' binaries
if [ ! -x "$BIN/metrics-server" ]; then
  log "building metrics-server v0.8.0"
  GOBIN=$BIN go install sigs.k8s.io/metrics-server/cmd/metrics-server@v0.8.0
fi
if ! command -v prometheus >/dev/null; then
  log "installing Debian's prometheus"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >"$LOGS/apt-prometheus.log" 2>&1 ||
    die "apt-get install prometheus failed (see $LOGS/apt-prometheus.log)"
fi
PROMETHEUS=$(command -v prometheus)

# The aggregation layer: the API server authenticates to metrics-server with a front-proxy
# client certificate (pki.sh) and routes to the endpoint's address (no service proxy here).
export APISERVER_EXTRA_ARGS="${APISERVER_EXTRA_ARGS:-} --requestheader-client-ca-file=$PKI/ca.crt
  --requestheader-allowed-names=front-proxy-client --requestheader-username-headers=X-Remote-User
  --requestheader-group-headers=X-Remote-Group --requestheader-extra-headers-prefix=X-Remote-Extra-
  --proxy-client-cert-file=$PKI/front-proxy-client.crt --proxy-client-key-file=$PKI/front-proxy-client.key
  --enable-aggregator-routing=true"
export APISERVER_EXTRA_ARGS=$(echo $APISERVER_EXTRA_ARGS)
# The kubelet's cAdvisor finds containerd at its default socket only: without it the upstream
# kubelet's /metrics/cadvisor has no container names or images.
if [ ! -e /run/containerd/containerd.sock ]; then
  mkdir -p /run/containerd && ln -sf "$CRI_SOCKET" /run/containerd/containerd.sock
fi

# prom EXPR FIELD — of what EXPR returns now: FIELD=count, the number of series (NaN samples
# count: a quantile of an idle histogram is still data; -1 when Prometheus refuses the query),
# or FIELD=value, the first series' value
prom() {
  curl -sf --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys
d=json.load(sys.stdin); r=d["data"]["result"] if d.get("status")=="success" else None
if sys.argv[1]=="count": print(-1 if r is None else len(r))
else: print(r[0]["value"][1] if r else "")' "$2" 2>/dev/null || { [ "$2" = count ] && echo -1; }
}

# measure AGENT — bring the cluster up with AGENT, run both consumers, write $OUT/AGENT-*
measure() {
  local agent=$1 fail=0
  select_agent "$agent"
  "$HERE/down.sh" --purge   # each agent on a new cluster: no pods, HPA state or series left over
  "$HERE/up.sh"
  kctl create namespace "$NS"

  # ---- metrics-server
  start_bg metrics-server "$BIN/metrics-server" --secure-port="$MS_PORT" --bind-address="$NODE_IP" \
    --cert-dir="$STATE/metrics-server" --kubeconfig="$ADMIN_KUBECONFIG" \
    --authentication-kubeconfig="$ADMIN_KUBECONFIG" --authorization-kubeconfig="$ADMIN_KUBECONFIG" \
    --kubelet-preferred-address-types=InternalIP --kubelet-certificate-authority="$PKI/ca.crt" \
    --metric-resolution=15s --v=2
  kctl apply -f - <<EOF
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec: {ports: [{name: https, port: 443, targetPort: $MS_PORT, protocol: TCP}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: metrics-server, namespace: kube-system}
subsets: [{addresses: [{ip: "$NODE_IP"}], ports: [{name: https, port: $MS_PORT, protocol: TCP}]}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: metrics-server, namespace: kube-system, port: 443}
EOF
  # A CPU-bound deployment (bounded by its limit) with a readiness probe, and an HPA on CPU.
  kctl apply -f - <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: burner, namespace: $NS}
spec:
  replicas: 1
  selector: {matchLabels: {app: burner}}
  template:
    metadata: {labels: {app: burner}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: burn
        image: $BUSYBOX
        command: [sh, -c, 'while :; do :; done']
        resources: {requests: {cpu: 100m, memory: 16Mi}, limits: {cpu: 200m, memory: 32Mi}}
        readinessProbe: {exec: {command: ['true']}, periodSeconds: 5}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: burner, namespace: $NS}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burner}
  minReplicas: 1
  maxReplicas: 3
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]
EOF
  local top=$OUT/$agent-top.txt
  : > "$top"
  top_node() { kctl top node "$NODE_NAME" --no-headers | tee -a "$top" | grep -Eq "^$NODE_NAME +[0-9]+m +[0-9]+% +[0-9]+Mi +[0-9]+%"; }
  top_pod() { kctl top pod -n "$NS" --no-headers | tee -a "$top" | grep -Eq '^burner-[^ ]+ +[1-9][0-9]*m +[0-9]+Mi'; }
  scaled() { [ "$(kctl -n "$NS" get hpa burner -o jsonpath='{.status.desiredReplicas}')" -gt 1 ]; }
  ( wait_for "kubectl top node ($agent)" 180 top_node ) || { echo "FAIL kubectl top node" >> "$top"; fail=1; }
  ( wait_for "kubectl top pod ($agent)" 120 top_pod ) || { echo "FAIL kubectl top pod" >> "$top"; fail=1; }
  ( wait_for "HPA scales on CPU ($agent)" 180 scaled ) || { echo "FAIL HPA did not scale" >> "$top"; fail=1; }
  kctl -n "$NS" get hpa burner >> "$top" 2>&1 || true
  kctl get --raw "/apis/metrics.k8s.io/v1beta1/nodes/$NODE_NAME" >> "$top" 2>&1 || true
  echo >> "$top"

  # ---- the summary API and /metrics/resource: field paths and series shapes, for the verdict
  local p
  for p in stats/summary metrics/resource metrics/cadvisor metrics; do
    kctl get --raw "/api/v1/nodes/$NODE_NAME/proxy/$p" > "$OUT/$agent-$(echo $p | tr / -).txt" || fail=1
  done
  python3 -c '
import json, sys
def walk(v, path, out):
    if isinstance(v, dict):
        for k, x in v.items(): walk(x, path + "." + k, out)
    elif isinstance(v, list):
        for x in v: walk(x, path + "[]", out)
    else: out.add(path)
out = set(); walk(json.load(sys.stdin), "", out)
print("\n".join(sorted(out)))' < "$OUT/$agent-stats-summary.txt" > "$OUT/$agent-summary-fields.txt" || fail=1
  sed -n -e 's/^\([a-z_]*\){\([^}]*\)}.*/\1 \2/p' -e t -e 's/^\([a-z_]*\) .*/\1/p' "$OUT/$agent-metrics-resource.txt" |
    awk '{ n = $1; l = ""; if (NF > 1) { gsub(/="[^"]*"/, "", $2); l = "{" $2 "}" } print n l }' | sort -u > "$OUT/$agent-resource-series.txt" || fail=1

  # ---- Prometheus with kube-prometheus' kubelet job
  kctl -n "$NS" create serviceaccount prometheus
  kctl create clusterrole consumers-prometheus --verb=get --resource=nodes/metrics,nodes/stats,nodes/proxy \
    --dry-run=client -o yaml | kctl apply -f -
  kctl create clusterrolebinding consumers-prometheus --clusterrole=consumers-prometheus \
    --serviceaccount="$NS:prometheus" --dry-run=client -o yaml | kctl apply -f -
  mkdir -p "$STATE/prometheus"
  kctl -n "$NS" create token prometheus --duration=2h > "$STATE/prometheus/token"
  sed -e "s|@TARGET@|$NODE_IP:10250|g" -e "s|@NODE@|$NODE_NAME|g" -e "s|@TOKEN_FILE@|$STATE/prometheus/token|g" \
    "$HERE/consumers/prometheus.yml.in" > "$STATE/prometheus/prometheus.yml"
  rm -rf "$STATE/prometheus/data"
  start_bg prometheus "$PROMETHEUS" --config.file="$STATE/prometheus/prometheus.yml" \
    --storage.tsdb.path="$STATE/prometheus/data" --web.listen-address="127.0.0.1:$PROM_PORT"
  up_all() { [ "$(prom 'count(up{job="kubelet"} == 1)' value)" = 4 ]; }
  ( wait_for "Prometheus scrapes all four kubelet endpoints ($agent)" 120 up_all ) || fail=1
  curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/targets" > "$OUT/$agent-targets.json" || true
  # Let the rate windows ([1m], [5m] need two samples) and the pods' metrics fill.
  sleep "${SCRAPE_SETTLE:-75}"
  local q=$OUT/$agent-queries.tsv
  : > "$q"
  while IFS=$'\t' read -r a b c; do
    local cond=always name expr
    case $a in
    '#?'*) cond=${a#\#?} name=$b expr=$c ;;
    '#'*|'') continue ;;
    *) name=$a expr=$b ;;
    esac
    printf '%s\t%s\t%s\n' "$(prom "$expr" count)" "$cond" "$name" >> "$q"
  done < "$HERE/consumers/kubelet-queries.tsv"
  log "$agent: $(awk -F'\t' '$1 > 0' "$q" | wc -l) of $(wc -l < "$q") queries return data"
  stop_bg prometheus
  stop_bg metrics-server
  return $fail
}

rc=0
for agent in $AGENTS; do
  measure "$agent" || rc=1
done
# Purged: the burner deployment and the aggregated API must not outlive the run (a later
# `make conformance` keeps etcd and would start the burners again).
[ "${KEEP:-0}" = 1 ] || "$HERE/down.sh" --purge

# ---------------------------------------------------------------- verdict
first=${AGENTS%% *} last=${AGENTS##* }
{
  for agent in $AGENTS; do
    echo "== $agent: metrics-server"
    grep -E '^FAIL' "$OUT/$agent-top.txt" || echo "kubectl top node, kubectl top pod and the CPU HPA: pass"
    echo "== $agent: $(awk -F'\t' '$1 > 0' "$OUT/$agent-queries.tsv" | wc -l) of $(wc -l < "$OUT/$agent-queries.tsv") queries return data"
  done
  if [ "$first" != "$last" ]; then
    missed=$(join -t $'\t' -1 3 -2 3 <(sort -t $'\t' -k3 "$OUT/$first-queries.tsv") <(sort -t $'\t' -k3 "$OUT/$last-queries.tsv") |
      awk -F'\t' '$2 > 0 && $4 <= 0 {print "  " $1 " (" $3 ")"}')
    extra=$(join -t $'\t' -1 3 -2 3 <(sort -t $'\t' -k3 "$OUT/$first-queries.tsv") <(sort -t $'\t' -k3 "$OUT/$last-queries.tsv") |
      awk -F'\t' '$2 <= 0 && $4 > 0 {print "  " $1 " (" $3 ")"}')
    if [ -n "$missed" ]; then
      echo "== $last misses $(echo "$missed" | wc -l) queries that return data under $first:"; echo "$missed"; rc=1
    else
      echo "== $last returns data for every query that does under $first"
    fi
    [ -z "$extra" ] || { echo "== $last answers $(echo "$extra" | wc -l) that $first does not:"; echo "$extra"; }
    for f in summary-fields resource-series; do
      gone=$(comm -23 "$OUT/$first-$f.txt" "$OUT/$last-$f.txt")
      if [ -n "$gone" ]; then
        echo "== $last lacks $(echo "$gone" | wc -l) $f of $first:"; echo "$gone" | sed 's/^/  /'; rc=1
      else
        echo "== $last has every one of $first's $f"
      fi
    done
  fi
} > "$OUT/verdict.txt"   # not piped: rc is set in this shell
cat "$OUT/verdict.txt"
exit $rc

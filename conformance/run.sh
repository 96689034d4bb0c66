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
#   SET=storage     the [sig-storage] specs of the volume types the agent has in-tree (emptyDir,
#                   hostPath, configMap, secret, projected, downwardAPI, subPath, ephemeral
#                   storage), with the same exclusions (384; most of the In-tree Volumes test
#                   patterns skip themselves at run time: PVs are not these drivers' kind)
#   SET=serial      the [Serial] specs of sig-node and of those storage areas, Slow ones included
#                   (not Disruptive, Flaky or [Feature:]: 33); ginkgo runs them one at a time
#   SET=pv          the [sig-storage] specs of persistent volumes on the node (issue 34): the local
#                   and PersistentVolumes-local drivers and the PersistentVolumes specs, with the
#                   same exclusions (698 listed; most patterns skip themselves at run time)
#   SET=csi         the upstream "External Storage" specs on the harness's CSI driver
#                   (examples/csi-hostdir, started on the host: CSI_DRIVER=1, described to the
#                   suite by csi-hostdir.yaml): dynamic, generic ephemeral and inline CSI volumes
#                   (99 listed; block, expansion, snapshot patterns skip themselves)
#   SET=extra       storage and serial in one run; SET=wide: all four sets in one run
#                   (each compared with its own baseline; AGENT=kubelet splits the candidates)
#   FOCUS, SKIP, LABEL_FILTER override a set's selection.
#   PROCS, TIMEOUT, RUN_NAME   as conformance.sh
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
# Each set is a focus (regexp over a spec's text) and a ginkgo label filter (the e2e framework
# labels every spec with its SIG and its Serial, Slow, Disruptive, Flaky, Feature:… tags).
storage_areas='\[sig-storage\] (EmptyDir|HostPath|ConfigMap|Secrets|Projected|Downward API|Subpath|Ephemeralstorage|In-tree Volumes \[Driver: (emptydir|hostPath|hostPathSymlink)\])'
plain='!Serial && !Disruptive && !Flaky && !Slow && !/^Feature:/'
case $SET in
conformance) BASELINES=$HERE/baseline-upstream-kubelet.tsv ;;
sig-node)
  export FOCUS=${FOCUS:-'\[sig-node\]'} SKIP=${SKIP:-'\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:'}
  BASELINES=$HERE/baseline-upstream-kubelet-sig-node.tsv ;;
storage)
  export FOCUS=${FOCUS:-$storage_areas} LABEL_FILTER=${LABEL_FILTER:-$plain}
  BASELINES=$HERE/baseline-upstream-kubelet-storage.tsv ;;
serial)
  export FOCUS=${FOCUS:-"\\[sig-node\\]|$storage_areas"} LABEL_FILTER=${LABEL_FILTER:-'Serial && !Disruptive && !Flaky && !/^Feature:/'}
  BASELINES=$HERE/baseline-upstream-kubelet-serial.tsv ;;
pv)
  export FOCUS=${FOCUS:-'\[sig-storage\] (PersistentVolumes-local|In-tree Volumes \[Driver: local\]|PersistentVolumes )'}
  export LABEL_FILTER=${LABEL_FILTER:-$plain}
  BASELINES=$HERE/baseline-upstream-kubelet-pv.tsv ;;
csi)
  export FOCUS=${FOCUS:-'External Storage \[Driver: csi\.nodekit\.io\]'} LABEL_FILTER=${LABEL_FILTER:-$plain}
  export CSI_DRIVER=1 E2E_EXTRA_ARGS="${E2E_EXTRA_ARGS:-} --storage.testdriver=$HERE/csi-hostdir.yaml"
  BASELINES=$HERE/baseline-upstream-kubelet-csi.tsv ;;
extra)
  # storage and serial in one run (to measure both baselines at once)
  export FOCUS=${FOCUS:-"\\[sig-node\\]|$storage_areas"}
  export LABEL_FILTER=${LABEL_FILTER:-"(sig-storage && $plain) || (Serial && !Disruptive && !Flaky && !/^Feature:/)"}
  BASELINES="$HERE/baseline-upstream-kubelet-storage.tsv $HERE/baseline-upstream-kubelet-serial.tsv" ;;
wide)
  export FOCUS=${FOCUS:-"\\[sig-node\\].*\\[Conformance\\]|\\[NodeConformance\\]|\\[sig-node\\]|$storage_areas"}
  export LABEL_FILTER=${LABEL_FILTER:-"Conformance || NodeConformance || ($plain) || (Serial && !Disruptive && !Flaky && !/^Feature:/)"}
  BASELINES="$HERE/baseline-upstream-kubelet.tsv $HERE/baseline-upstream-kubelet-sig-node.tsv $HERE/baseline-upstream-kubelet-storage.tsv $HERE/baseline-upstream-kubelet-serial.tsv" ;;
*) die "SET=$SET: want conformance, sig-node, storage, serial, pv, csi, extra or wide" ;;
esac
[ "$(id -u)" = 0 ] || die "run as root: the cluster runs containerd and mounts volumes"
if [ ! -x "$BIN/e2e.test" ] || [ ! -x "$BIN/kubelet" ]; then
  log "building the cluster's binaries into $BIN (first time: ~30 min on 2 cores)"
  "$HERE/build.sh"
fi
[ -d "$STATE/registry" ] || "$HERE/images.sh" build
select_agent "$AGENT"
if [ "${CSI_DRIVER:-0}" = 1 ]; then
  log "building the harness's CSI driver"
  (cd "$HERE/.." && go build -o "$BIN/csi-hostdir" ./examples/csi-hostdir)
fi
"$HERE/down.sh"
"$HERE/up.sh"
export RUN_NAME=${RUN_NAME:-$AGENT-$SET$( [ "$JOIN" = 1 ] && echo -join )-$(date +%Y%m%d-%H%M%S)}
rc=0
"$HERE/conformance.sh" || rc=$?
results=$STATE/report/$RUN_NAME/results.tsv
if [ -f "$results" ]; then
  if [ "$AGENT" = kubelet ]; then
    # One candidate per baseline of the set, each holding the specs of its own set.
    for b in $BASELINES; do
      case $(basename "$b") in
      *-csi.tsv) member='$3 !~ /\[(Serial|Disruptive|Flaky|Slow)\]|\[Feature:/ && $3 ~ /External Storage \[Driver: csi\.nodekit\.io\]/' ;;
      *-storage.tsv|*-pv.tsv) member='$3 !~ /\[(Serial|Disruptive|Flaky|Slow)\]|\[Feature:/ && $3 ~ /^\[sig-storage\] /' ;;
      *-serial.tsv) member='$3 ~ /\[Serial\]/ && $3 !~ /\[(Disruptive|Flaky)\]|\[Feature:/' ;;
      *-sig-node.tsv) member='$3 ~ /^\[sig-node\]/ && $3 !~ /\[(Serial|Disruptive|Flaky|Slow)\]|\[Feature:/' ;;
      *) member='$3 ~ /\[sig-node\].*\[Conformance\]|\[NodeConformance\]/' ;;
      esac
      cand=$STATE/report/$RUN_NAME/$(basename "$b")
      awk -F'\t' "\$1 != \"skipped\" && \$1 != \"filtered-out\" && \$1 != \"pending\" && $member {print \$1 \"\\t\" \$3}" "$results" |
        sort -t"$(printf '\t')" -k2 > "$cand"
      log "baseline candidate: $cand ($(wc -l < "$cand") specs; copy it to $b to adopt it)"
    done
  fi
  : > "$STATE/report/$RUN_NAME/compare.txt"
  for b in $BASELINES; do
    if [ -f "$b" ]; then
      { echo "== $(basename "$b")"; BASELINE=$b "$HERE/compare.sh" "$results"; } | tee -a "$STATE/report/$RUN_NAME/compare.txt"
    else
      log "no baseline $b yet: measure it with AGENT=kubelet"
    fi
  done
fi
[ "${KEEP:-0}" = 1 ] || "$HERE/down.sh"
exit $rc

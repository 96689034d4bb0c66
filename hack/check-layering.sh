#!/usr/bin/env bash
# Checks the house layering rules on the root module:
#  - nothing imports k8s.io/kubernetes;
#  - each block package imports no other block package (syncloop may use
#    pleg and prober, whose output it routes).
set -eu
cd "$(dirname "$0")/.."
mod=github.com/nodekit/nodekit
blocks="nodestatus lease pleg podworkers eviction prober syncloop kubeletapi"
bad=0
if go list -deps ./... | grep -q '^k8s.io/kubernetes'; then
  echo "the library imports k8s.io/kubernetes:"; go list -deps ./... | grep '^k8s.io/kubernetes' | head; bad=1
fi
for p in $blocks; do
  deps=$(go list -deps "./$p/..." | grep "^$mod/" || true)
  for q in $blocks; do
    [ "$p" = "$q" ] && continue
    if [ "$p" = syncloop ] && { [ "$q" = pleg ] || [ "$q" = prober ]; }; then continue; fi
    if echo "$deps" | grep -qE "^$mod/$q(/|$)"; then
      echo "$p imports $q"; bad=1
    fi
  done
done
[ $bad -eq 0 ] && echo "layering ok: no k8s.io/kubernetes, blocks independent"
exit $bad

#!/usr/bin/env bash
# Checks the house layering rules on the root module:
#  - nothing imports k8s.io/kubernetes;
#  - each block package imports no other block package, except the edges
#    named in its doc.go (below); leaves (containerid, kubetypes, clockctx,
#    clockdrive, crisim, podenv, downward, cgroups, allocation, podmanager,
#    objects, containergc, kubeclient) may be imported by anyone;
#  - no block imports examples/ or another package's internal/;
#  - the node-path blocks and the virtual-nodes program do not link
#    client-go's clientset (its scheme of every API group): they take
#    kubeclient's interfaces.
set -eu
cd "$(dirname "$0")/.."
mod=github.com/nodekit/nodekit
blocks="imagegc logrotate nodestatus lease pleg podworkers eviction prober syncloop kubeletapi podstatus podsyncer podhandler volumes admission nodeclaim nodecerts kubeletconfig virtualnode pluginwatch criinstrument basemetrics clientmetrics stats userns"
# allowed "block:dependency" edges
allowed=" syncloop:pleg syncloop:prober podsyncer:podworkers podsyncer:pleg podsyncer:podstatus podhandler:podworkers podhandler:admission virtualnode:lease virtualnode:nodestatus virtualnode:podworkers virtualnode:kubeletapi virtualnode:podstatus "
bad=0
if go list -deps ./... | grep -q '^k8s.io/kubernetes'; then
  echo "the library imports k8s.io/kubernetes:"; go list -deps ./... | grep '^k8s.io/kubernetes' | head; bad=1
fi
for p in $blocks; do
  deps=$(go list -deps "./$p/..." | grep "^$mod/" || true)
  for q in $blocks; do
    [ "$p" = "$q" ] && continue
    case "$allowed" in *" $p:$q "*) continue ;; esac
    if echo "$deps" | grep -qE "^$mod/$q(/|$)"; then
      echo "$p imports $q"; bad=1
    fi
  done
  if echo "$deps" | grep -qE "^$mod/examples/"; then
    echo "$p imports examples/"; bad=1
  fi
  if echo "$deps" | grep -E "^$mod/.*internal" | grep -qvE "^$mod/($p/|internal/)"; then
    echo "$p imports another package's internal/"; bad=1
  fi
done
narrow="./lease ./nodestatus ./podstatus ./kubeletapi ./virtualnode ./virtualnode/simulated ./examples/virtualnodes"
if go list -deps $narrow | grep -qE '^k8s.io/client-go/kubernetes(/scheme)?$'; then
  echo "a node-path block or examples/virtualnodes links client-go's clientset (use kubeclient):"
  for p in $narrow; do go list -deps "$p" | grep -qE '^k8s.io/client-go/kubernetes(/scheme)?$' && echo "  $p"; done
  bad=1
fi
[ $bad -eq 0 ] && echo "layering ok: no k8s.io/kubernetes, blocks independent but for the named edges, node path without the clientset"
exit $bad

#!/usr/bin/env bash
# Fails if any k8s.io module in the build list of the root, test or conformance module
# floats away from the pinned release. The module proxy serves v0.37 staging
# modules that match no k8s.io/kubernetes release; an unpinned `go get` would
# pick them.
set -eu
want_staging=v0.36.3
want_kubernetes=v1.36.3
cd "$(dirname "$0")/.."
bad=0
for dir in . test conformance; do
  [ -f "$dir/go.mod" ] || continue
  while read -r path version; do
    case "$path" in
      k8s.io/kubernetes) want=$want_kubernetes ;;
      k8s.io/utils|k8s.io/klog|k8s.io/klog/v2|k8s.io/kube-openapi|k8s.io/gengo|k8s.io/gengo/v2|k8s.io/system-validators|k8s.io/heapster) continue ;;
      *) want=$want_staging ;;
    esac
    if [ "$version" != "$want" ]; then
      echo "$dir/go.mod: $path resolves to $version (want $want)"; bad=1
    fi
  done < <(cd "$dir" && go list -m -f '{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' all | grep '^k8s\.io/')
done
[ $bad -eq 0 ] && echo "k8s.io modules pinned: staging $want_staging, kubernetes $want_kubernetes"
exit $bad

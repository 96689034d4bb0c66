#!/usr/bin/env bash
# containerd-up.sh DIR — starts a private containerd (CRI enabled) under DIR
# with its own socket DIR/containerd.sock, bridge CNI, and a busybox image
# (built locally from /bin/busybox, also used as the pause image) imported
# as nodekit.local/busybox:1. Prints the CRI endpoint. Needs root,
# containerd, runc, containernetworking-plugins and busybox-static.
set -euo pipefail
dir=$1
mkdir -p "$dir"/{root,state,cni-conf}
cat > "$dir/cni-conf/10-bridge.conflist" <<CNI
{"cniVersion":"0.4.0","name":"nodekit","plugins":[
 {"type":"bridge","bridge":"nkbr0","isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.89.0.0/16"}]]}},
 {"type":"loopback"}]}
CNI
cat > "$dir/config.toml" <<TOML
version = 2
root = "$dir/root"
state = "$dir/state"
[grpc]
  address = "$dir/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "nodekit.local/busybox:1"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni-conf"
TOML
containerd --config "$dir/config.toml" > "$dir/containerd.log" 2>&1 &
echo $! > "$dir/containerd.pid"
for _ in $(seq 100); do [ -S "$dir/containerd.sock" ] && break; sleep 0.1; done
python3 "$(dirname "$0")/busybox-oci.py" "$dir/busybox.tar" nodekit.local/busybox:1
ctr --address "$dir/containerd.sock" -n k8s.io images import "$dir/busybox.tar" >/dev/null
echo "unix://$dir/containerd.sock"

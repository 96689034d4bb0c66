#!/usr/bin/env bash
# pki.sh — create the cluster CA, all component certificates, the service-account
# key pair and the kubeconfigs under $STATE/pki and $STATE/*.kubeconfig.
# Idempotent: existing files are kept (delete $STATE/pki to regenerate).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"
mkdir -p "$PKI"
cd "$PKI"
[ -n "$NODE_IP" ] || die "cannot determine NODE_IP (set it)"

if [ ! -f ca.key ]; then
  openssl genrsa -out ca.key 2048 2>/dev/null
  openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=minicluster-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" -out ca.crt
fi
if [ ! -f sa.key ]; then
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
fi

# cert NAME SUBJECT EXTKEYUSAGE [SAN]
cert() {
  local name=$1 subj=$2 eku=$3 san=${4:-}
  [ -f "$name.crt" ] && return 0
  openssl genrsa -out "$name.key" 2048 2>/dev/null
  openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -sha256 \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

cert apiserver "/CN=kube-apiserver" serverAuth \
  "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$KUBERNETES_SVC_IP,IP:$NODE_IP"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert admin "/O=system:masters/CN=kubernetes-admin" clientAuth
cert controller-manager "/CN=system:kube-controller-manager" clientAuth
cert scheduler "/CN=system:kube-scheduler" clientAuth
cert node "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
cert kubelet-serving "/CN=$NODE_NAME" serverAuth "DNS:$NODE_NAME,DNS:localhost,IP:$NODE_IP,IP:127.0.0.1"
# the API server's client certificate toward aggregated API servers (consumers.sh: metrics-server)
cert front-proxy-client "/CN=front-proxy-client" clientAuth

# kubeconfig FILE USER CERTNAME
kubeconfig() {
  local file=$1 user=$2 c=$3
  cat > "$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: minicluster
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 < "$PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 < "$PKI/$c.crt")
    client-key-data: $(base64 -w0 < "$PKI/$c.key")
contexts:
- name: $user@minicluster
  context: {cluster: minicluster, user: $user}
current-context: $user@minicluster
EOF
  chmod 600 "$file"
}
kubeconfig "$ADMIN_KUBECONFIG" kubernetes-admin admin
kubeconfig "$STATE/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
kubeconfig "$STATE/scheduler.kubeconfig" system:kube-scheduler scheduler
kubeconfig "$STATE/node.kubeconfig" "system:node:$NODE_NAME" node
# A bootstrap token (kubeadm's format: [a-z0-9]{6}.[a-z0-9]{16}) and a kubeconfig that presents
# it; up.sh creates its Secret and RBAC bindings when JOIN=1.
if [ ! -f bootstrap-token ]; then
  printf '%s.%s\n' "$(tr -dc 'a-z0-9' < /dev/urandom | head -c 6)" "$(tr -dc 'a-z0-9' < /dev/urandom | head -c 16)" > bootstrap-token
fi
cat > "$BOOTSTRAP_KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: minicluster
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 < "$PKI/ca.crt")
users:
- name: kubelet-bootstrap
  user:
    token: $(cat bootstrap-token)
contexts:
- name: kubelet-bootstrap@minicluster
  context: {cluster: minicluster, user: kubelet-bootstrap}
current-context: kubelet-bootstrap@minicluster
EOF
chmod 600 "$BOOTSTRAP_KUBECONFIG"
log "pki ready in $PKI (node $NODE_NAME, node IP $NODE_IP)"

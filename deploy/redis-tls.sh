#!/bin/sh
# Makes a private CA and a TLS certificate it signs for the shared kits'
# Redis (ECDSA P-256, one year), a password for its ACL user vigil, and
# one for its internal users (the replica's and the Sentinels'):
#
#   deploy/redis-tls.sh DIR [DNS-NAME...]
#
# DIR gets ca.crt, ca.key, tls.crt, tls.key, redis-password and
# redis-internal-password. The names default to redis, redis-replica,
# sentinel-1, sentinel-2, sentinel-3 (compose.shared.yaml) and vigil-redis
# (k8s-shared); add vigil-redis.NAMESPACE.svc if clients use it. Keep ca.key out of any
# Secret: it only signs the next certificate. Then:
#
#   compose: deploy/redis-tls.sh deploy/redis-tls, and
#            VIGIL_REDIS_PASSWORD=$(cat deploy/redis-tls/redis-password)
#            VIGIL_REDIS_INTERNAL_PASSWORD=$(cat deploy/redis-tls/redis-internal-password)
#   k8s:     kubectl create secret generic vigil-redis-tls \
#              --from-file=DIR/ca.crt --from-file=DIR/tls.crt --from-file=DIR/tls.key
#            and redis-password into the Secret vigil-shared (deploy/k8s-shared)
#
# A managed PKI (cert-manager, a cloud CA) does the same with ca.crt,
# tls.crt and tls.key in one Secret.
set -eu

if [ $# -lt 1 ]; then
	sed -n '2,22s/^# \{0,1\}//p' "$0" >&2
	exit 2
fi
dir=$1
shift
[ $# -gt 0 ] || set -- redis redis-replica sentinel-1 sentinel-2 sentinel-3 vigil-redis
san=""
for name in "$@"; do
	san="${san:+$san,}DNS:$name"
done

mkdir -p "$dir"
umask 077
cd "$dir"
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=vigil Redis CA" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.crt
openssl ecparam -name prime256v1 -genkey -noout -out tls.key
openssl req -new -key tls.key -subj "/CN=$1" -out tls.csr
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n' "$san" >tls.ext
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 365 -extfile tls.ext -out tls.crt
rm -f tls.csr tls.ext ca.srl
[ -s redis-password ] || openssl rand -base64 32 | tr -d '\n=' | tr '+/' '-_' >redis-password
[ -s redis-internal-password ] || openssl rand -base64 32 | tr -d '\n=' | tr '+/' '-_' >redis-internal-password
# The certificates are public; the keys and the password stay 0600.
chmod 0644 ca.crt tls.crt
echo "wrote $dir: ca.crt tls.crt tls.key (for $*), ca.key, redis-password, redis-internal-password" >&2

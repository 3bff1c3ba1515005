#!/usr/bin/env bash
# A throwaway CA and one certificate per rank for a local cluster, for trials
# of mutual TLS ([tls] in docs/operations.md), with the openssl command line:
#   DIR/ca.crt, DIR/ca.key                 the CA (P-256, 30 days)
#   DIR/rank<r>.crt, DIR/rank<r>.key       rank r's certificate, signed by the CA,
#                                          SAN IP:127.0.0.1 and DNS:localhost,
#                                          usable as TLS client and server
#
#   ./launch/make-certs.sh DIR RANKS
# Never use these for a real deployment: the CA key sits next to the ranks'.
set -euo pipefail
(($# == 2)) || { echo "usage: $0 DIR RANKS" >&2; exit 2; }
DIR=$1
RANKS=$2
((RANKS >= 1)) || { echo "make-certs: RANKS must be at least 1" >&2; exit 2; }
command -v openssl >/dev/null || { echo "make-certs: the openssl command is missing" >&2; exit 1; }
mkdir -p "$DIR"
umask 077  # private keys readable by their owner only

openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -subj "/CN=strata throwaway CA" -keyout "$DIR/ca.key" -out "$DIR/ca.crt" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  2>/dev/null

EXT="$DIR/rank.ext"
cat >"$EXT" <<'EXTEOF'
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
EXTEOF
for ((r = 0; r < RANKS; r++)); do
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=strata rank $r" -keyout "$DIR/rank$r.key" -out "$DIR/rank$r.csr" 2>/dev/null
  openssl x509 -req -in "$DIR/rank$r.csr" -CA "$DIR/ca.crt" -CAkey "$DIR/ca.key" \
    -CAcreateserial -days 30 -extfile "$EXT" -out "$DIR/rank$r.crt" 2>/dev/null
  rm -f "$DIR/rank$r.csr"
done
rm -f "$EXT" "$DIR/ca.srl"
chmod 644 "$DIR/ca.crt" "$DIR"/rank*.crt
echo "make-certs: CA $DIR/ca.crt and certificates for ranks 0..$((RANKS - 1)) in $DIR"

#!/usr/bin/env bash
# Test support for both clients' TLS cases: a CA, and server and client certificates it signed for
# 127.0.0.1 and localhost, written into the current directory (ca.pem, server.pem/.key, client.pem/.key).
set -euo pipefail
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 1 \
  -subj /CN=berth-test-ca 2>/dev/null
for who in server client; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $who.key -out $who.csr \
    -subj /CN=$who 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > $who.ext
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $who.pem -days 1 \
    -extfile $who.ext 2>/dev/null
done

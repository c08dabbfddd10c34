#!/usr/bin/env bash
# A one-member etcd on loopback for the high-availability tests (issue 20), like slurm-up.sh for Slurm.
# Installs Debian's etcd-server when `etcd` is missing (major version 3 required), starts one member with its data
# under ETCD_UP_DIR (default /tmp/berth-etcd) serving clients on 127.0.0.1:${ETCD_UP_PORT:-2379} and peers on the
# next port, and waits (bounded) until `etcdctl endpoint health` says healthy. Idempotent: a healthy member already
# on that port is left alone. Needs root only to install. Usage: scripts/etcd-up.sh   (env ETCD_UP_TIMEOUT: s, 30)
set -euo pipefail

PORT="${ETCD_UP_PORT:-2379}"
PEER=$((PORT + 1))
DIR="${ETCD_UP_DIR:-/tmp/berth-etcd}"
TIMEOUT="${ETCD_UP_TIMEOUT:-30}"
ENDPOINT="127.0.0.1:${PORT}"

healthy() { ETCDCTL_API=3 etcdctl --endpoints="$ENDPOINT" --command-timeout=2s endpoint health >/dev/null 2>&1; }

if command -v etcdctl >/dev/null 2>&1 && healthy; then
  echo "etcd-up: etcd already healthy on $ENDPOINT"
  exit 0
fi

if ! command -v etcd >/dev/null 2>&1; then
  if [[ "$(id -u)" != 0 ]]; then
    echo "etcd-up: etcd is not installed and installing it needs root (apt-get install etcd-server)" >&2
    exit 1
  fi
  echo "etcd-up: installing etcd-server (Debian)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >/dev/null
fi
major="$(etcd --version | sed -n 's/^etcd Version: \([0-9]*\)\..*/\1/p')"
if [[ "$major" != 3 ]]; then
  echo "etcd-up: etcd major version 3 required (found '$(etcd --version | head -n1)')" >&2
  exit 1
fi

mkdir -p "$DIR"
nohup etcd --name berth-ci --data-dir "$DIR/data" \
  --listen-client-urls "http://${ENDPOINT}" --advertise-client-urls "http://${ENDPOINT}" \
  --listen-peer-urls "http://127.0.0.1:${PEER}" --initial-advertise-peer-urls "http://127.0.0.1:${PEER}" \
  --initial-cluster "berth-ci=http://127.0.0.1:${PEER}" --initial-cluster-state new \
  >"$DIR/etcd.log" 2>&1 &
echo $! >"$DIR/etcd.pid"

for _ in $(seq 1 $((TIMEOUT * 10))); do
  if healthy; then
    echo "etcd-up: etcd $(etcd --version | head -n1 | awk '{print $3}') healthy on $ENDPOINT (pid $(cat "$DIR/etcd.pid"), data $DIR)"
    exit 0
  fi
  if ! kill -0 "$(cat "$DIR/etcd.pid")" 2>/dev/null; then
    echo "etcd-up: etcd exited; its log:" >&2
    tail -n 20 "$DIR/etcd.log" >&2
    exit 1
  fi
  sleep 0.1
done
echo "etcd-up: etcd not healthy on $ENDPOINT within ${TIMEOUT} s; its log:" >&2
tail -n 20 "$DIR/etcd.log" >&2
exit 1

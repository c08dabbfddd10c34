#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the Slurm provisioner's tests (issue 12).
# Installs slurmctld, slurmd, slurm-client and munge from Debian when missing, writes a munge key
# and /etc/slurm/slurm.conf, starts munged, slurmctld and slurmd as root, and waits (bounded) until
# `sinfo` shows the node idle. Idempotent: with the node already up (idle, or running jobs) it does nothing.
# Needs root. Usage: scripts/slurm-up.sh   (env SLURM_UP_TIMEOUT: seconds to wait, default 90)
set -euo pipefail

TIMEOUT="${SLURM_UP_TIMEOUT:-90}"
NODE="$(hostname -s)"
CONF=/etc/slurm/slurm.conf

node_state() { sinfo -h -N -n "$NODE" -o '%T' 2>/dev/null | head -n1 || true; }

state="$(node_state)"
if command -v sinfo >/dev/null 2>&1 && [[ "$state" =~ ^(idle|mixed|allocated|completing) ]]; then
  echo "slurm-up: node $NODE already up ($state)"
  exit 0
fi

if [[ "$(id -u)" != 0 ]]; then
  echo "slurm-up: must run as root (it installs packages and starts daemons)" >&2
  exit 1
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null \
  || ! command -v munged >/dev/null; then
  echo "slurm-up: installing slurmctld slurmd slurm-client munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi

# munge: a key readable only by the munge daemon's user (the package creates the munge user).
install -d -m 0700 -o munge -g munge /etc/munge
install -d -m 0711 -o munge -g munge /var/lib/munge /var/log/munge /run/munge
if [[ ! -s /etc/munge/munge.key ]]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  rm -f /run/munge/munged.pid
  runuser -u munge -- /usr/sbin/munged
fi
for _ in $(seq 1 50); do
  munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break
  sleep 0.1
done
munge -n </dev/null | unmunge >/dev/null

# slurm.conf: one node with this host's cores and a little less memory than it has, reached on
# loopback (no need for the host name to resolve).
CPUS="$(nproc)"
TOTAL_MB="$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)"
REAL_MB=$(( TOTAL_MB * 9 / 10 ))
install -d -m 0755 /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/slurm
cat >"$CONF" <<CONF
# Written by berth scripts/slurm-up.sh: a one-node cluster for tests.
ClusterName=berth
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=60
InactiveLimit=0
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$REAL_MB State=UNKNOWN
PartitionName=main Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF

if ! scontrol ping 2>/dev/null | grep -q 'is UP'; then
  /usr/sbin/slurmctld
fi
if ! pgrep -x slurmd >/dev/null; then
  /usr/sbin/slurmd
fi

deadline=$(( $(date +%s) + TIMEOUT ))
while :; do
  state="$(node_state)"
  case "$state" in
    idle*) echo "slurm-up: node $NODE idle ($CPUS cpus, ${REAL_MB} MB)"; exit 0 ;;
    down*|drain*) scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true ;;
  esac
  if (( $(date +%s) >= deadline )); then
    echo "slurm-up: node $NODE not idle after ${TIMEOUT}s (state '${state:-none}')" >&2
    tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
    exit 1
  fi
  sleep 0.5
done

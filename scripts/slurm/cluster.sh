#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine (munged, slurmctld and slurmd from Debian's
# packages, started without systemd), for csrun's integration tests and for trying the sbatch
# scripts beside this file. Run as root.
#
#   scripts/slurm/cluster.sh up       install what is missing, configure, start, wait for a job
#   scripts/slurm/cluster.sh down     cancel every job, stop the daemons `up` started
#   scripts/slurm/cluster.sh status   the daemons and the node; exit 0 when usable
#   scripts/slurm/cluster.sh env      prints `export SLURM_CONF=...` (for eval)
#
# Environment: CSRUN_SLURM_DIR (state, logs, config; default /tmp/csrun-slurm),
# CSRUN_SLURM_CPUS (CPUs the node advertises; default 16, so multi-task jobs fit on 2 cores),
# CSRUN_SLURM_PORT (slurmctld's port, slurmd takes the next; default 6817).
# The node is `localhost` (127.0.0.1), partition `debug`; no cgroups, no accounting.
set -euo pipefail

dir=${CSRUN_SLURM_DIR:-/tmp/csrun-slurm}
cpus=${CSRUN_SLURM_CPUS:-16}
port=${CSRUN_SLURM_PORT:-6817}
conf=$dir/etc/slurm.conf
socket=$dir/munge/munge.socket
pids=$dir/run/daemons
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export SLURM_CONF=$conf

say() { echo "cluster.sh: $*" >&2; }
fail() {
  say "$*"
  for log in "$dir"/log/*.log "$dir"/munge/munged.log; do
    [ -r "$log" ] && { echo "--- $log"; tail -n 20 "$log"; } >&2
  done
  exit 1
}

# A recorded daemon is alive: its pid exists, has the right name and is not a zombie.
alive() {
  local name=$1 pid
  pid=$(awk -v n="$name" '$1 == n { print $2 }' "$pids" 2>/dev/null || true)
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] &&
    ! grep -q '^[^)]*) Z' "/proc/$pid/stat" 2>/dev/null
}

# Retries a command for up to 60 s.
await() {
  local what=$1
  shift
  for _ in $(seq 600); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "timed out waiting for $what"
}

install_packages() {
  local needed=0
  for binary in munged slurmctld slurmd sbatch srun scancel sinfo; do
    command -v "$binary" >/dev/null || needed=1
  done
  [ "$needed" -eq 0 ] && return 0
  say "installing slurmctld slurmd slurm-client munge (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurm-client munge >/dev/null; } ||
    fail "cannot install the SLURM packages"
}

write_config() {
  local memory listen=""
  memory=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
  # Listen on loopback only when the host name resolves there and nowhere else.
  if [ "$(getent ahostsv4 "$(hostname)" | awk '{ print $1 }' | sort -u)" = 127.0.0.1 ]; then
    listen="CommunicationParameters=NoInAddrAny,NoCtldInAddrAny"
  fi
  cat >"$conf" <<CONF
# Written by csrun's scripts/slurm/cluster.sh: one node, everything on this machine.
ClusterName=csrun
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
$listen
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.log
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
KillWait=5
MinJobAge=300
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
}

# Starts a daemon that forks into the background and records its pid.
start() {
  local name=$1 pidfile=$2
  shift 2
  "$@" </dev/null >>"$dir/log/daemons.out" 2>&1 || fail "$name did not start"
  await "$name's pid file" test -s "$pidfile"
  echo "$name $(cat "$pidfile")" >>"$pids"
  alive "$name" || fail "$name exited right after starting"
}

node_state() { sinfo -h -N -n localhost -o %T 2>/dev/null | head -n 1; }
node_idle() { [ "$(node_state)" = idle ]; }
usable() {
  alive munged && alive slurmctld && alive slurmd &&
    [[ $(node_state) =~ ^(idle|mixed|allocated|completing)$ ]]
}

up() {
  [ "$(id -u)" -eq 0 ] || fail "run as root (the daemons run as root)"
  install_packages
  if usable; then
    say "already up ($dir)"
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  down >/dev/null 2>&1 || true
  rm -rf "${dir:?}"/{etc,munge,state,spool,log,run}
  mkdir -p "$dir"/{etc,munge,state,spool,log,run}
  chmod 755 "$dir" "$dir/munge"
  (umask 077 && head -c 128 /dev/urandom >"$dir/munge/munge.key")
  write_config
  start munged "$dir/munge/munged.pid" munged --socket="$socket" \
    --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  await "munge credentials" sh -c "munge -n -S '$socket' | unmunge -S '$socket'"
  start slurmctld "$dir/run/slurmctld.pid" slurmctld -f "$conf"
  await "slurmctld" sh -c "scontrol ping | grep -q 'is UP'"
  start slurmd "$dir/run/slurmd.pid" slurmd -f "$conf" -N localhost
  await "the node to become idle" node_idle
  # slurmctld schedules its first batch job a few seconds after it starts: run one, so the
  # cluster is ready for real jobs when `up` returns.
  sbatch --wait --quiet -J csrun-cluster-ready -n 1 -o /dev/null --wrap 'srun -n 1 true' ||
    fail "the readiness job failed"
  await "the node to become idle" node_idle
  say "up: node localhost with $cpus CPUs, partition debug ($dir)"
  echo "export SLURM_CONF=$conf"
}

down() {
  if alive slurmctld; then
    local jobs
    jobs=$(squeue -h -o %A 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -n "$jobs" ] && scancel $jobs 2>/dev/null || true
  fi
  for name in slurmd slurmctld munged; do
    alive "$name" || continue
    local pid
    pid=$(awk -v n="$name" '$1 == n { print $2 }' "$pids")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do alive "$name" || break; sleep 0.1; done
    alive "$name" && kill -KILL "$pid" 2>/dev/null || true
  done
  rm -f "$pids"
  say "down"
}

status() {
  for name in munged slurmctld slurmd; do
    if alive "$name"; then echo "$name: running"; else echo "$name: not running"; fi
  done
  echo "node: $(node_state || true)"
  usable
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) echo "usage: scripts/slurm/cluster.sh up|down|status|env" >&2; exit 2 ;;
esac

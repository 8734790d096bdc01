#!/usr/bin/env bash
# start-slurm.sh DIR starts a one-node SLURM on loopback for tests: munged, slurmctld and
# slurmd, all with their state, logs and sockets under DIR and a slurm.conf generated in
# DIR/slurm.conf. It returns when the node is idle. Client commands need SLURM_CONF=DIR/slurm.conf.
#
# It installs nothing (.ci/apt-deps.sh does) and needs root: slurmd runs jobs as their users.
# The daemons' process ids are left in DIR/munged.pid, DIR/slurmctld.bgpid and
# DIR/slurmd.bgpid; stop-slurm.sh DIR (or the test's cleanup) stops them by those ids.
#
# Ports: SLURM_TEST_PORT (slurmctld) and SLURM_TEST_PORT+1 (slurmd), default 16817.
set -euo pipefail

D=${1:?usage: start-slurm.sh DIR}
D=$(cd "$D" && pwd)
port=${SLURM_TEST_PORT:-16817}

for cmd in munged mungekey slurmctld slurmd sinfo; do
	if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$cmd" ]; then
		echo "start-slurm.sh: $cmd not found (install slurm-wlm and munge: .ci/apt-deps.sh)" >&2
		exit 3
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	echo "start-slurm.sh: needs root (slurmd starts jobs as their users; munged runs as root here)" >&2
	exit 4
fi
PATH=$PATH:/usr/sbin

mkdir -p "$D"/{munge,state,spool,log}
# munged refuses a socket whose directories are not world-searchable (mktemp -d gives 700).
chmod 755 "$D" "$D/munge"
p=$(dirname "$D")
while [ "$p" != / ]; do
	if [ "$(( $(stat -c %a "$p" | tail -c 2 | head -c 1) & 1 ))" -eq 0 ]; then
		echo "start-slurm.sh: $p is not world-searchable; munged will refuse its socket" >&2
	fi
	p=$(dirname "$p")
done

# RealMemory above the real memory makes the node "inval": 90% of what is available.
mem=$(awk '/MemAvailable/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
cpus=$(nproc)
cat >"$D/slurm.conf" <<CONF
ClusterName=gpunotes-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
SlurmUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
InactiveLimit=0
KillWait=5
SchedulerParameters=sched_interval=1
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$D/slurm.conf

# A fresh key: munged (as root) refuses the package's key, which the munge user owns.
mungekey -c -k "$D/munge/munge.key" >/dev/null 2>&1 || mungekey -c -f -k "$D/munge/munge.key"
munged --socket="$D/munge/munge.socket" --key-file="$D/munge/munge.key" \
	--log-file="$D/munge/munged.log" --pid-file="$D/munge/munged.pid" \
	--seed-file="$D/munge/munged.seed"
cp "$D/munge/munged.pid" "$D/munged.pid"

# -D keeps them in the foreground of a background job, so their pids are ours to stop.
setsid slurmctld -D -i </dev/null >"$D/log/slurmctld.out" 2>&1 &
echo $! >"$D/slurmctld.bgpid"
setsid slurmd -D </dev/null >"$D/log/slurmd.out" 2>&1 &
echo $! >"$D/slurmd.bgpid"

for _ in $(seq 1 300); do
	state=$(sinfo -h -o %t 2>/dev/null || true)
	if [ "$state" = idle ]; then
		exit 0
	fi
	for pf in slurmctld slurmd; do
		if ! kill -0 "$(cat "$D/$pf.bgpid")" 2>/dev/null; then
			echo "start-slurm.sh: $pf exited:" >&2
			tail -n 20 "$D/log/$pf.out" "$D/log/$pf.log" >&2 2>/dev/null || true
			exit 5
		fi
	done
	sleep 0.1
done
echo "start-slurm.sh: the node did not become idle within 30 s (state: ${state:-none})" >&2
tail -n 20 "$D/log/slurmctld.log" "$D/log/slurmd.log" >&2 2>/dev/null || true
exit 6

#!/usr/bin/env bash
# stop-slurm.sh DIR stops what start-slurm.sh DIR started, by the process ids it left in DIR:
# slurmd and slurmctld first (SIGTERM, then SIGKILL after 10 s), then munged.
set -uo pipefail
D=${1:?usage: stop-slurm.sh DIR}

stop() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 0
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
}
stop "$D/slurmd.bgpid"
stop "$D/slurmctld.bgpid"
stop "$D/munged.pid"

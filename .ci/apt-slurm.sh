#!/usr/bin/env bash
# apt-slurm.sh installs Debian's slurm-wlm and munge when they are missing, so that the SLURM
# tests in cluster/slurm can start a one-node SLURM on loopback (see
# cluster/slurm/testdata/start-slurm.sh). It needs root (or sudo) and apt-get; elsewhere it
# says why it cannot install and exits 0, and the tests skip with the reason (under CI=true
# they fail instead).
set -euo pipefail

need=()
for cmd in slurmctld slurmd sbatch squeue scancel sinfo; do
	command -v "$cmd" >/dev/null 2>&1 || { need+=(slurm-wlm); break; }
done
for cmd in munged mungekey; do
	command -v "$cmd" >/dev/null 2>&1 || { need+=(munge); break; }
done
if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "apt-slurm.sh: apt-get not found; install ${need[*]} yourself to run the SLURM tests" >&2
	exit 0
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		echo "apt-slurm.sh: not root and no passwordless sudo; the SLURM tests will skip" >&2
		exit 0
	fi
fi
echo "apt-slurm.sh: installing ${need[*]}" >&2
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${need[@]}"

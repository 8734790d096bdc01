#!/usr/bin/env bash
# apt-deps.sh installs, from Debian's packages, what the tests drive besides the virtualenv:
# chromium (the browser tests; never a browser a test tool downloads), and slurm-wlm + munge
# (the SLURM tests start a one-node SLURM on loopback: cluster/slurm/testdata/start-slurm.sh),
# libopenblas0-pthread (the CPU linear algebra's kernels) and g++ (lib.cu's complex functions
# built for the host).
# Only what is missing is installed, after one apt-get update. Without root (or passwordless
# sudo) or apt-get it says why and exits 0; the tests then skip with the reason, and fail
# under CI=true.
set -euo pipefail

need=()
[ -x "${GPUNOTES_CHROMIUM:-/usr/bin/chromium}" ] || need+=(chromium)
for cmd in slurmctld slurmd sbatch squeue scancel sinfo; do
	command -v "$cmd" >/dev/null 2>&1 || { need+=(slurm-wlm); break; }
done
for cmd in munged mungekey; do
	command -v "$cmd" >/dev/null 2>&1 || { need+=(munge); break; }
done
# g++ for kernels' host build of lib.cu's complex functions (TestComplexMathMatchesGo).
command -v g++ >/dev/null 2>&1 || need+=(g++)
# OpenBLAS for the CPU linear algebra (gpuarray/linalg/openblas loads it at run time).
ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so\.0' || [ -e /usr/lib/x86_64-linux-gnu/libopenblas.so.0 ] || need+=(libopenblas0-pthread)
[ ${#need[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "apt-deps.sh: apt-get not found; install ${need[*]} yourself" >&2
	exit 0
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		echo "apt-deps.sh: not root and no passwordless sudo; cannot install ${need[*]}" >&2
		exit 0
	fi
fi
echo "apt-deps.sh: installing ${need[*]}"
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${need[@]}"

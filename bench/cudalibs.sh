# Sourced by the GPU scripts of bench/ (gpu.sh, frame-1e8-gpu.sh, across-gpu.sh): the CUDA
# libraries that call stages load at run time (cuFFT, cuSOLVER, cuBLAS) come from the
# machine's nvidia Python wheels when the system's loader path lacks them. Appends their
# folders to LD_LIBRARY_PATH (exported) and leaves them in CUDA_WHEEL_LIBS ("" when python3
# or the wheels are missing). A script that travels without the checkout takes this file
# along, beside it.
CUDA_WHEEL_LIBS=
if CUDA_WHEEL_LIBS=$(python3 - 2>/dev/null <<'PY'
import os, nvidia
dirs = set()
for base in nvidia.__path__:
    for root, _, files in os.walk(base):
        if any(f.startswith(("libcufft.so", "libcusolver.so", "libcublas.so")) for f in files):
            dirs.add(root)
print(":".join(sorted(dirs)))
PY
) && [[ -n $CUDA_WHEEL_LIBS ]]; then
	export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDA_WHEEL_LIBS
else
	CUDA_WHEEL_LIBS=
fi

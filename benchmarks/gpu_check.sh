#!/usr/bin/env bash
# The GPU tests (lab_assets_tests/test_gpu.py, `@pytest.mark.gpu`) on a CUDA host, from the repository root:
#   bash benchmarks/gpu_check.sh [python]     # default: .venv/bin/python
# The interpreter needs a CUDA build of torch (with Triton) and the `test` extra; this repository's pinned
# torch (constraints.txt) is whatever wheel the index served, often the CPU one. The check refuses to run
# on a CPU-only torch instead of reporting skips, and CI=true turns any skip left into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-.venv/bin/python}"
"$PY" - <<'PY'
import importlib.util, sys
import torch
if not torch.cuda.is_available():
    sys.exit(f"gpu_check: torch {torch.__version__} sees no CUDA device (CUDA build: {torch.version.cuda})")
print(f"gpu_check: torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}, "
      f"bf16 {torch.cuda.is_bf16_supported()}, triton {'yes' if importlib.util.find_spec('triton') else 'MISSING'}")
PY
unset LAB_DEVICE LAB_TORCH_COMPILE LAB_PEAK_FLOPS
CI=true exec "$PY" -m pytest -v -rs -p no:cacheprovider lab_assets_tests/test_gpu.py lab_assets_tests/test_training_backend.py

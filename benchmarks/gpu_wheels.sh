#!/usr/bin/env bash
# The wheels a lent GPU machine lacks for this package (its image has torch, PyG, Lightning,
# torchmetrics, numpy, scipy, networkx, pyyaml and filelock; not pydantic, nor RDKit for ZINC),
# downloaded here for its Python (3.12, x86_64 Linux) into .whl/, which git ignores through
# .git/info/exclude. Versions from constraints.txt. Usage, from the repository root:
#   bash benchmarks/gpu_wheels.sh            # pydantic and its three dependencies (~2 MB)
#   bash benchmarks/gpu_wheels.sh --chem     # also RDKit, for ZINC (~35 MB)
# then name .whl in the device tool's carry and begin the device command with
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:src
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
pin() { grep -iE "^${1//[-_]/[-_]}==" constraints.txt | head -1 || true; }
pkgs=("$(pin pydantic)" "$(pin pydantic_core)" "$(pin annotated_types)" "$(pin typing_inspection)")
if [[ "${1:-}" == "--chem" ]]; then pkgs+=("$(pin rdkit)"); fi
for spec in "${pkgs[@]}"; do
  [[ -n "$spec" ]] || { echo "a package is missing from constraints.txt" >&2; exit 1; }
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -d .whl "$spec"
done
ls -la .whl

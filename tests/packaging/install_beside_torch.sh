#!/usr/bin/env bash
# Proves that the wheel and the sdist install next to a torch the user already has, without
# replacing it (issue 15 §1). Usage:
#   tests/packaging/install_beside_torch.sh VENV_DIR TORCH_VERSION [OUT_JSON]
# VENV_DIR is created when missing and torch==TORCH_VERSION installed into it first (a CUDA
# build from PyPI is several GB; on this project's CI machines torch 2.14.1 lies on local disk).
# The script builds both distributions from this checkout, installs the wheel, checks that the
# torch version is unchanged and runs a forward/backward pass of a GT layer, then does the same
# with the sdist, and writes what it saw to OUT_JSON (default: stdout).
set -euo pipefail
venv=${1:?VENV_DIR}; torch_version=${2:?TORCH_VERSION}; out=${3:-/dev/stdout}
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q "torch==$torch_version"
before=$("$venv/bin/python" -c "import torch; print(torch.__version__)")
dist=$(mktemp -d)
build_py=${BUILD_PYTHON:-$repo/.venv/bin/python}
(cd "$repo" && "$build_py" -m build --outdir "$dist" . > "$dist/build.log" 2>&1) || {
  tail -20 "$dist/build.log"; exit 1; }
rm -rf "$repo/src/graph_transformers.egg-info" "$repo/build"
smoke='import json, torch, importlib.metadata as md
from graph_transformers.nn import GraphTransformerLayer
x = torch.randn(5, 16); ei = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
out = GraphTransformerLayer(16, 4)(x, ei); out = out[0] if isinstance(out, tuple) else out
out.sum().backward()
print(json.dumps({"torch": torch.__version__, "graph_transformers": md.version("graph-transformers")}))'
result=()
for kind in whl tar.gz; do
  "$venv/bin/python" -m pip uninstall -q -y graph-transformers > /dev/null 2>&1 || true
  "$venv/bin/python" -m pip install -q "$dist"/graph_transformers-*."$kind"
  seen=$(cd "$dist" && "$venv/bin/python" -c "$smoke")
  after=$("$venv/bin/python" -c "import torch; print(torch.__version__)")
  [ "$after" = "$before" ] || { echo "installing the $kind replaced torch $before by $after"; exit 1; }
  result+=("\"$kind\": $seen")
done
python3 - "$out" "$before" "${result[@]}" <<'PY'
import json, platform, sys
out, torch_before, *parts = sys.argv[1:]
record = {"torch_before": torch_before, "python": platform.python_version(),
          "installs": json.loads("{" + ", ".join(parts) + "}"), "torch_unchanged": True}
text = json.dumps(record, indent=2) + "\n"
open(out, "w").write(text) if out != "/dev/stdout" else sys.stdout.write(text)
PY

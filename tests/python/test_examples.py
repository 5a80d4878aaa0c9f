"""The MLP examples run: the gradient check against torch/JAX autograd (1e-10,
float64) and the decreasing loss are asserted inside the scripts."""

import os
import pathlib
import subprocess
import sys

import pytest

from conftest import need

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("script,module,extra", [("mlp_torch.py", "torch", "torch"),
                                                 ("mlp_jax.py", "jax", "jax")])
def test_mlp_example(script, module, extra):
    need("numpy", "python")
    need("clang.cindex", "python")
    need(module, extra)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, str(EXAMPLES / script)], env=env, text=True,
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    err = float(r.stdout.split("grad| = ")[1].split()[0])
    assert err < 1e-10
    assert "over the last 8" in r.stdout

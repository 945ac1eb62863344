"""Nothing silently wrong on the newer surfaces (issue 22): pickles, locks, long loops, Gramians
of constant systems, inputs in constraints, clocks, off-manifold plants, Appell maps, hydraulic
parameters, loaded files, one-coordinate orientations, the CLI and sweeps.

The catalogue (`CATALOGUE`) has the format of tests/test_bad_inputs.py: every case asserts the
error class and that the message names the culprit (the argument, parameter, field or file, and
the value where there is one). The security and hang classes have their own tests below, each
finishing within seconds.
"""

from __future__ import annotations

import gc
import os
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import CacheError
from nhcontrol.compiled.model import _REGISTRY, load_compiled
from nhcontrol.modeling import MultibodySystem, rot_z

ROOT = Path(__file__).resolve().parents[1]


# ================================================================== 1. security: pickles
_PROBE = '''
import sympy as sp
from nhcontrol.modeling import MultibodySystem, rot_z

def probe():
    mb = MultibodySystem("pickle_probe_issue22")
    x, y, th = mb.add_coordinates("x y theta")
    xd, yd, thd = mb.velocities
    m, J = mb.add_parameters(m=1.25, J=0.125)
    mb.add_body("blade", mass=m, inertia=sp.diag(J, J, J), position=[x, y, 0], orientation=rot_z(th))
    mb.add_nonholonomic(-sp.sin(th) * xd + sp.cos(th) * yd, name="blade")
    return mb
'''
_ns: dict = {}
exec(_PROBE, _ns)   # the same model in this process and in the fresh child process
_probe = _ns["probe"]


class _Crafted:
    """What an attacker pickles: nhcontrol's own unpickling target with altered source."""

    def __init__(self, key: str, source: str) -> None:
        import hashlib
        self.args = (key, source, hashlib.sha256(source.encode()).hexdigest())

    def __reduce__(self):
        return (load_compiled, self.args)


def test_crafted_pickle_cannot_plant_code_in_the_cache(tmp_path, monkeypatch):
    """Altered source + recomputed sha256: unpickling writes nothing to the cache, and a later
    ``mb.compile()`` in a fresh process (same cache) derives its own kernels and never runs it."""
    cache = tmp_path / "cache"
    marker = tmp_path / "planted_code_ran"
    cm = _probe().compile(cache=False)
    key, src, _sha = cm.__reduce__()[1]
    evil = src + f"\nopen({str(marker)!r}, 'a').write('ran\\n')\n"
    blob = pickle.dumps(_Crafted(key, evil))
    del cm
    gc.collect()
    _REGISTRY.pop(key, None)
    monkeypatch.setenv("NHCONTROL_CACHE_DIR", str(cache))
    loaded = pickle.loads(blob)      # runs in this process (pickles are code: documented) ...
    assert marker.exists() and loaded.source_path is None and not loaded.from_cache
    marker.unlink()
    planted = [p.name for p in cache.glob("nhc_*")] if cache.exists() else []
    assert planted == [], f"unpickling wrote {planted} into the kernel cache"   # ... but not into the cache
    del loaded
    gc.collect()
    child = _PROBE + ("\nimport numpy as np\ncm = probe().compile()\n"
                      "print(cm.from_cache, cm.M(np.array([0.1, 0.2, 0.3])).diagonal().tolist())\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), NHCONTROL_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split(" ", 1)
    assert out[0] == "False"                       # derived from the equations, not from the cache
    assert not marker.exists(), "a later mb.compile() ran the crafted source"
    assert out[1].strip() == "[1.25, 1.25, 0.125]"
    assert (cache / f"nhc_{key}.py").exists()       # its own, generated kernels
    assert "planted_code_ran" not in (cache / f"nhc_{key}.py").read_text()


@pytest.mark.parametrize("key", ["../../../tmp/evil", "A" * 64, "0" * 63, 42])
def test_pickle_key_that_is_not_a_digest_is_refused(key):
    with pytest.raises(CacheError, match=r"not a sha256 hex digest.*not loaded"):
        load_compiled(key, "META = {}\n", "0" * 64)

# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The benchmark bicycle in ten cells
#
# The bicycle of Meijaard et al. (2007), modelled in absolute coordinates (thesis Sect. 4.3:
# $n = 11$ coordinates, $m = 4$ holonomic and $l = 4$ nonholonomic constraints), linearized about
# its steady forward motion by the third numerical procedure (Sect. 4.2.3, Eqs. (4.96)–(4.125)).
# We reproduce the eigenvalues of Meijaard's Table 2 and the three critical speeds, then hand the
# linearization to python-control.

# %%
import control
import matplotlib.pyplot as plt
import numpy as np

import nhcontrol
from nhcontrol.analysis import critical_points, structural_zeros
from nhcontrol.models import benchmark_bicycle as bb

cm = bb.model()                      # exact kernels, built once and then loaded from the disk cache
print(cm.coordinates)

# %%
partition = bb.PARTITION_4_172       # x_ai = [x_b, phi_b, delta], Eq. (4.172)
lin = nhcontrol.linearize(cm, bb.steady_forward(cm, v=5.0), partition)
print(lin.A.shape, lin.states)

# %% [markdown]
# Six eigenvalues are exact zeros (the four nonholonomic constraints and the forward motion: rows
# and columns of the Jacobian that vanish). The other four are those of Meijaard's Table 2 at
# $v = 5$ m/s: weave $-0.7753 \pm 4.4649i$, capsize $-0.3229$, castering $-14.0784$.

# %%
zeros = structural_zeros(lin.A)
keep = np.ix_(zeros.keep, zeros.keep)
ev = np.sort_complex(np.linalg.eigvals(lin.A[keep]))
print(zeros.n_zero, "exact zeros; lean and steer eigenvalues:", np.round(ev, 4))
assert zeros.n_zero == 6
assert np.allclose(ev, [-14.0784, -0.7753 - 4.4649j, -0.7753 + 4.4649j, -0.3229], atol=5e-5)

# %%
def lean_steer(v):
    """Lean and steer block of the exact Jacobian at speed v."""
    return nhcontrol.linearize(cm, bb.steady_forward(cm, v), partition).A[keep]


speeds = np.linspace(0.0, 10.0, 41)
eigs = np.array([np.sort_complex(np.linalg.eigvals(lean_steer(v))) for v in speeds])
crit = {c.kind: c.value for c in critical_points(lean_steer, speeds)}
print({k: round(v, 6) for k, v in crit.items()})    # v_d, v_w, v_c of Meijaard's Table 2
assert abs(crit["oscillatory"] - 4.292382) < 1e-5 and abs(crit["real"] - 6.024262) < 1e-5

# %%
fig, ax = plt.subplots(figsize=(7.2, 3.6))
ax.plot(speeds, eigs.real, "k.", ms=3)
ax.plot(speeds, np.abs(eigs.imag), ".", color="tab:blue", ms=3)
ax.axvspan(crit["oscillatory"], crit["real"], color="0.9", label="self-stable")
ax.set(xlabel="forward speed v (m/s)", ylabel="eigenvalue (1/s)", ylim=(-10, 10),
       title="Benchmark bicycle: real parts (black), |imaginary parts| (blue)")
ax.legend(loc="lower left");

# %% [markdown]
# The linearization is a named python-control `StateSpace`: any python-control tool applies.
# Released at 4.6 m/s (inside the self-stable range) with a lean of 0.05 rad, the bicycle
# rights itself.

# %%
ss = nhcontrol.linearize(cm, bb.steady_forward(cm, 4.6), partition).to_statespace()
x0 = np.zeros(ss.nstates)
x0[ss.state_labels.index("phi_b")] = 0.05
resp = control.initial_response(ss, np.linspace(0.0, 10.0, 501), x0)
phi = resp.states[ss.state_labels.index("phi_b")]
print(f"lean after 10 s: {phi[-1]:.2e} rad")
assert abs(phi[-1]) < 0.05 * 0.05

# %% [markdown]
# Next: `nhcontrol reproduce bicycle-benchmark` gives the quartic's coefficients of Table 4.2
# and Figs. 4.4–4.5; the guide *The benchmark bicycle* explains the validation procedures.

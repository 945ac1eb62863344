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
# # Your own model: from sympy.mechanics to an LQR on the nonlinear plant
#
# A pendulum on a cart written with `sympy.physics.mechanics` (sympy's own
# `n_link_pendulum_on_cart`, a `KanesMethod`) goes into nhcontrol with one call. We linearize it
# exactly about the upright position (third numerical procedure, thesis Sect. 4.2.3), design an
# LQR with python-control, and close the loop on the **nonlinear** model through
# `control.interconnect`.

# %%
import control
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from sympy.physics.mechanics import dynamicsymbols
from sympy.physics.mechanics.models import n_link_pendulum_on_cart

from nhcontrol import linearize
from nhcontrol.interop import from_sympy_mechanics
from nhcontrol.reference import Reference
from nhcontrol.simulate import to_nlsys

kane = n_link_pendulum_on_cart(1, cart_force=True, joint_torques=False)
g, l0, m0, m1 = sp.symbols("g l0 m0 m1")
F = dynamicsymbols("F")
mb = from_sympy_mechanics(kane, {g: 9.81, l0: 0.5, m0: 1.0, m1: 0.3}, inputs=[F],
                          name="notebook_cart_pendulum")
cm = mb.compile()
print(cm.coordinates, cm.inputs)     # q0: cart position, q1: pendulum angle (from the vertical)

# %% [markdown]
# The upright pendulum at rest is an equilibrium (`Reference.constant_velocity` with zero
# velocities). Its exact linearization has one unstable eigenvalue, $+\sqrt{g (m_0 + m_1) /
# (m_0 l_0)}$ for a point mass on a massless rod.

# %%
upright = Reference.constant_velocity(cm, np.zeros(2), np.zeros(2))
lin = linearize(cm, upright, dict(independent=["q0", "q1"]))
ss = lin.to_statespace()
ev = np.linalg.eigvals(ss.A)
print(ss.state_labels, np.round(np.sort(ev.real), 4))
assert np.isclose(ev.real.max(), np.sqrt(9.81 * 1.3 / 0.5), rtol=1e-10)

# %% [markdown]
# An LQR on the linearization: python-control's own call, unchanged.

# %%
Q = np.diag([10.0, 100.0, 1.0, 1.0])
K, S, E = control.lqr(ss, Q, np.eye(1))
print("closed-loop eigenvalues:", np.round(E, 3))
assert np.all(E.real < 0)

# %% [markdown]
# The nonlinear plant is a python-control `NonlinearIOSystem` (`to_nlsys`); the state feedback
# is a static gain block. We start 0.3 rad (17°) from upright — far enough for the nonlinear
# and the linear responses to differ visibly.

# %%
plant = to_nlsys(cm, name="plant")
ctrl = control.ss(np.zeros((0, 0)), np.zeros((0, 4)), np.zeros((1, 0)), -K,
                  inputs=list(ss.state_labels), outputs=["F"], name="lqr")
loop = control.interconnect([plant, ctrl], inputs=[], outputs=list(ss.state_labels) + ["F"])
t = np.linspace(0.0, 8.0, 401)
X0 = np.array([0.0, 0.3, 0.0, 0.0])
nonlinear = control.input_output_response(loop, t, 0, X0)
linear = control.initial_response(control.ss(ss.A - ss.B @ K, np.zeros((4, 0)), np.eye(4),
                                             np.zeros((4, 0))), t, X0)
q1 = nonlinear.outputs[1]
print(f"angle after 8 s: {q1[-1]:.1e} rad; peak force {np.abs(nonlinear.outputs[-1]).max():.1f} N")
assert abs(q1[-1]) < 1e-3

# %%
fig, ax = plt.subplots(figsize=(7.2, 3.2))
ax.plot(t, q1, label="nonlinear plant")
ax.plot(t, linear.outputs[1], "--", label="linearization")
ax.set(xlabel="time (s)", ylabel="pendulum angle q1 (rad)", title="LQR from the exact linearization")
ax.legend();

# %% [markdown]
# The same steps hold for any `System` or `KanesMethod` without dependent speeds, nonholonomic
# models included (guide *You have a sympy.mechanics model*).

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
# # Output feedback: sensors, an EKF on the constraint manifold and an LQR
#
# A steerable sled on a knife edge (a wheel that cannot slip sideways, 0.25 m ahead of the centre
# of mass) with a steering torque `T`. We declare two sensors on the model — a gyro on the yaw rate
# and a compass on the heading — design a discrete LQR on the exact linearization, estimate the
# state with an extended Kalman filter (exact Jacobians of the third numerical procedure and of
# the sensors, at the estimate), and close the loop on the nonlinear model with seeded noise.

# %%
import control
import matplotlib.pyplot as plt
import numpy as np

from nhcontrol.design import ExtendedKalmanFilter
from nhcontrol.linearization import linearize
from nhcontrol.reference import Reference
from nhcontrol.simulate import output_feedback_loop

V, PSI0, DT = 1.5, 0.2, 0.02                  # speed (m/s), heading error (rad), sample time (s)
SIGMA = {"gyro": 0.005, "compass": 0.02, "torque": 0.05}

# %% [markdown]
# The sled is the one of `examples/own_model.py` (a rigid body, a knife-edge contact, a steering
# torque and a rotational damper, built with `MultibodySystem`); we declare its two sensors on it.

# %%
import sys

sys.path.insert(0, "../examples")             # this notebook runs from notebooks/
from own_model import build                   # noqa: E402

mb = build()
psi = mb.coordinates[2]
mb.add_output("gyro", mb.body_angular_velocity(mb.body("sled"))[2])   # body-frame yaw rate
mb.add_output("compass", psi)                                        # heading
cm = mb.compile()

# %% [markdown]
# The straight run at 1.5 m/s and its exact linearization: the output matrix `C` of the declared
# sensors comes with it. The LQR regulates the heading and its rate (`to_statespace` with named
# states checks that they do not depend on the dropped ones).

# %%
ref = Reference.constant_velocity(cm, [0.0, 0.0, 0.0], [V, 0.0, 0.0])
partition = dict(independent=["x", "psi"], admissible_dependent=["y"], dependent=[])
lin = linearize(cm, ref, partition)
print("states:", lin.states, "outputs:", lin.outputs)
print("C =", np.round(lin.C, 6).tolist())
red = control.c2d(lin.to_statespace(states=["psi", "psi_d"]), DT)
K, _, E = control.dlqr(red.A, red.B, np.diag([10.0, 1.0]), np.eye(1))
print("closed-loop |z|:", np.round(np.abs(E), 4))

# %%
ekf = ExtendedKalmanFilter(cm, partition, DT, Rn=np.diag([SIGMA["gyro"] ** 2, SIGMA["compass"] ** 2]),
                           x0=ref.x(0.0), xd0=ref.xd(0.0),
                           P0=np.diag([1e-4, 0.3 ** 2, 1e-2, 0.1 ** 2, 1e-4]),
                           Qw=[[SIGMA["torque"] ** 2]], Qx=1e-10 * np.eye(5))
i_psi, i_psid = lin.states.index("psi"), lin.states.index("psi_d")


def controller(k, t, X):
    return -K @ X[[i_psi, i_psid]]          # the reference has psi = psi_d = 0

# %% [markdown]
# The loop on the nonlinear model: the sled starts 0.2 rad off, which the filter does not know
# (its initial estimate is the reference). Sensor and torque noise are seeded.

# %%
truth = []                                    # the true heading at each sample
noise = {"measurement_noise": [SIGMA["gyro"], SIGMA["compass"]],
         "process_noise": [SIGMA["torque"]], "seed": 3}
x0 = np.array([0.0, 0.0, PSI0])
xd0 = V * np.array([np.cos(PSI0), np.sin(PSI0), 0.0])  # rolling along the heading: no side slip
res = output_feedback_loop(cm, (0.0, 6.0), x0, xd0, estimator=ekf, controller=controller,
                           sample_time=DT, u_init=[0.0], **noise,
                           pre_sample=lambda t, x, xd: truth.append(x[2]))
true_psi = np.array(truth)
error = true_psi - res.estimates[:, i_psi]
late = res.time >= 3.0
print(f"heading after 6 s: {true_psi[-1]:.4f} rad (from {PSI0}); "
      f"estimation error after 3 s <= {np.abs(error[late]).max():.4f} rad")
assert abs(true_psi[-1]) < 0.05 and np.abs(error[late]).max() < 3 * SIGMA["compass"]

# %%
fig, ax = plt.subplots(figsize=(7.2, 3.4))
ax.plot(res.time, res.outputs[:, 1], ".", ms=2, color="0.6", label="compass")
ax.plot(res.time, true_psi, label="true heading")
ax.plot(res.time, res.estimates[:, i_psi], "--", label="EKF estimate")
ax.set(xlabel="time (s)", ylabel="heading (rad)", title="Sled: EKF and LQR on the nonlinear model")
ax.legend();

# %% [markdown]
# `examples/sled_lqg.py` adds the consistency check of the filter (NEES); the guide *Sensors,
# estimation, LQG* covers Kalman filters on LTV systems and the ball-plate LQG.

"""Small models shared by several test modules: a pinned pendulum (two holonomic constraints) and
a Chaplygin sleigh pushed by a DC motor whose current is a first-order state. Each builder
returns the (uncompiled) model and its symbols, so a test adds its own sensors."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import sympy as sp

from nhcontrol.modeling import MultibodySystem, contacts, rot_z

SLEIGH = dict(m=1.0, I_zz=0.05, a=-0.2, kt=0.5, ke=0.5, R=1.0, Lm=0.05, c=0.3)
"""Parameters of the motor-driven sleigh."""


def pinned_pendulum(name: str) -> tuple[MultibodySystem, SimpleNamespace]:
    """A bar of length L pinned at one end (coordinates x, y of its centre and theta; two
    holonomic constraints), driven by a torque tau, under gravity along -y."""
    mb = MultibodySystem(name)
    x, y, th = mb.add_coordinates("x y theta")
    L, m, g = mb.add_parameters(L=1.2, m=2.0, g=9.81)
    tau = mb.add_inputs("tau")
    bar = mb.add_body("bar", mass=m, inertia=sp.diag(m * L**2 / 12, 0, m * L**2 / 12),
                      position=[x, y, 0], orientation=rot_z(th))
    mb.add_gravity(g, direction=(0, -1, 0))
    mb.add_torque(bar, [0, 0, tau])
    mb.add_holonomic(x - L / 2 * sp.sin(th), name="pin_x")
    mb.add_holonomic(y + L / 2 * sp.cos(th), name="pin_y")
    return mb, SimpleNamespace(x=x, y=y, theta=th, tau=tau, L=L, m=m, g=g)


def sleigh_motor(name: str) -> tuple[MultibodySystem, SimpleNamespace]:
    """Chaplygin sleigh (l = 1) pushed by a DC motor whose current i is a first-order state,
    L_m di/dt = V - R i - k_e v (v the speed along the blade), plus a yaw torque tau."""
    mb = MultibodySystem(name)
    x, y, psi = mb.add_coordinates("x y psi")
    m, I_zz, a, kt, ke, R, Lm, c = mb.add_parameters(**SLEIGH)
    i = mb.add_first_order_states("i")
    V, tau = mb.add_inputs("V tau")
    Rz = rot_z(psi)
    G = sp.Matrix([x, y, 0])
    body = mb.add_body("sleigh", mass=m, inertia=sp.diag(I_zz / 2, I_zz / 2, I_zz), position=G,
                       orientation=Rz)
    contacts.knife_edge(mb, body, G + Rz * sp.Matrix([a, 0, 0]), (1, 0, 0), name="blade")
    xd, yd, _ = mb.velocities
    v = sp.cos(psi) * xd + sp.sin(psi) * yd
    mb.add_force(body, (kt * i - c * v) * (Rz * sp.Matrix([1, 0, 0])))
    mb.add_torque(body, sp.Matrix([0, 0, tau]))
    mb.set_rates({i: (V - R * i - ke * v) / Lm})
    return mb, SimpleNamespace(x=x, y=y, psi=psi, xd=xd, yd=yd, v=v, i=i, V=V, tau=tau, R=R)


class ZeroRef:
    """The reference of a linear plant regulated to zero (one coordinate ``p``, one input ``f``):
    the origin, with ``u0 = 0``."""
    coordinates = ("p",)
    inputs = ("f",)

    def u(self, t):
        return np.zeros(np.shape(t) + (1,))

    def x(self, t):
        return np.zeros(1)

    def xd(self, t):
        return np.zeros(1)

"""Small example models used in tests, docs and benchmarks.

* `pendulum()` -- planar physical pendulum in absolute coordinates (n=3, m=2, l=0),
  optionally with its pivot moved by an input (Sect. 8.1) and a torque input;
* `sleigh()` -- Chaplygin knife-edge sleigh (n=3, m=0, l=1);
* `rolling_disc()` -- thin disc rolling on the ground (n=6, m=1, l=2);
* `spatial_body()` -- free rigid body with every load type (spring, damper, force at a
  point, torque, gravity) and inputs in its kinematics (n=6, m=0, l=0 ... plus one
  holonomic constraint to exercise ``C(x, u)``).
"""

from __future__ import annotations

import sympy as sp

from .rotations import euler_rotation, rot_z
from .system import MultibodySystem


def pendulum(with_inputs: bool = False) -> MultibodySystem:
    """Physical pendulum: uniform bar of length ``L`` pinned at one end, coordinates ``x, y, theta``.

    The pin is at the origin (or at ``(u_pivot, 0)`` with ``with_inputs``, plus a torque ``tau``).
    """
    mb = MultibodySystem("pendulum_inputs" if with_inputs else "pendulum")
    x, y, th = mb.add_coordinates("x y theta")
    L, m, g = mb.add_parameters(L=1.2, m=2.0, g=9.81)
    bar = mb.add_body("bar", mass=m, inertia=sp.diag(m * L**2 / 12, 0, m * L**2 / 12),
                      position=[x, y, 0], orientation=rot_z(th))
    mb.add_gravity(g, direction=(0, -1, 0))
    x0 = 0
    if with_inputs:
        a, tau = mb.add_inputs("u_pivot tau")
        x0 = a
        mb.add_torque(bar, [0, 0, tau])
    mb.add_holonomic(x - x0 - L / 2 * sp.sin(th), name="pin_x")
    mb.add_holonomic(y + L / 2 * sp.cos(th), name="pin_y")
    return mb


def sleigh() -> MultibodySystem:
    """Chaplygin sleigh: knife edge at ``(x, y)``, centre of mass at distance ``a`` along the blade."""
    mb = MultibodySystem("sleigh")
    x, y, th = mb.add_coordinates("x y theta")
    xd, yd, thd = mb.velocities
    a, m, Iz, c = mb.add_parameters(a=0.3, m=1.5, Iz=0.2, c=0.1)
    body = mb.add_body("sleigh", mass=m, inertia=sp.diag(0.1, 0.1, Iz),
                       position=[x + a * sp.cos(th), y + a * sp.sin(th), 0], orientation=rot_z(th))
    mb.add_torque(body, [0, 0, -c * thd])
    mb.add_nonholonomic(-sp.sin(th) * xd + sp.cos(th) * yd, name="blade")
    return mb


def rolling_disc() -> MultibodySystem:
    """Thin disc of radius ``r`` rolling without slipping: ``R = Rz(psi) Rx(phi) Ry(theta)``."""
    mb = MultibodySystem("rolling_disc")
    x, y, z, psi, phi, theta = mb.add_coordinates("x y z psi phi theta")
    r, m, g = mb.add_parameters(r=0.3, m=2.0, g=9.81)
    R = euler_rotation("zxy", (psi, phi, theta))
    disc = mb.add_body("disc", mass=m, inertia=sp.diag(m * r**2 / 4, m * r**2 / 2, m * r**2 / 4),
                       position=[x, y, z], orientation=R)
    mb.add_gravity(g)
    down = euler_rotation("zxy", (psi, phi, 0)) * sp.Matrix([0, 0, 1])
    P = sp.Matrix([x, y, z]) - r * down
    mb.add_holonomic(P[2], name="contact_z")
    vP = mb.point_velocity(disc, P)
    mb.add_nonholonomic(vP[0], name="roll_x")
    mb.add_nonholonomic(vP[1], name="roll_y")
    return mb


def spatial_body() -> MultibodySystem:
    """A free rigid body with a spring, a damper, a force at a point, a torque and gravity.

    Inputs ``u1`` (moves the spring anchor, quasi-static) and ``u2`` (enters the orientation
    offset and a torque) exercise every ``∂/∂u`` kernel; one holonomic constraint
    ``z - u1 x = 0`` and one nonholonomic constraint exercise ``C``, ``B``.
    """
    mb = MultibodySystem("spatial_body")
    x, y, z, a, b, c = mb.add_coordinates("x y z a b c")
    xd, yd, zd, ad, bd, cd = mb.velocities
    m, g, k, d, L0, I1, I2, I3, I12 = mb.add_parameters(m=1.3, g=9.81, k=20.0, d=0.7, L0=0.4, I1=0.3,
                                                        I2=0.5, I3=0.6, I12=0.05)
    u1, u2 = mb.add_inputs("u1 u2")
    R = euler_rotation("zyx", (a + u2, b, c))
    I = sp.Matrix([[I1, I12, 0], [I12, I2, 0], [0, 0, I3]])
    body = mb.add_body("body", mass=m, inertia=I, position=[x, y, z], orientation=R)
    mb.add_gravity(g)
    tip = sp.Matrix([x, y, z]) + R * sp.Matrix([0.2, 0.1, -0.3])
    mb.add_spring(None, [u1, 0, 1.0], body, tip, k, L0)
    mb.add_damper(None, [0, 0, 1.0], body, tip, d)
    mb.add_force(body, [0.5 * u2, -0.2 * yd, 1.0], point=tip)
    mb.add_torque(body, [0, 0.1 * u2, -0.05 * ad])
    mb.add_holonomic(z - 0.5 * x - u1 * y, name="plane")
    mb.add_nonholonomic(xd * sp.cos(a) + yd * sp.sin(a) - 0.2 * cd, name="skate")
    return mb


__all__ = ["pendulum", "sleigh", "rolling_disc", "spatial_body"]

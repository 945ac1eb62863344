"""Elemental rotations and the twelve Euler/Tait--Bryan sequences.

Thesis Sect. 2.1, Eqs. (2.23)--(2.26): counterclockwise elemental rotations
(viewed from the positive end of the axis) whose product, taken from the global
frame towards the body frame, is the orientation matrix ``R`` that maps body
components to global components, ``r_P = r_O + R r̄_OP`` (Eq. (2.27)).
"""

from __future__ import annotations

from typing import Sequence

import sympy as sp

from .._util.errors import ModelError

PROPER_EULER_SEQUENCES: tuple[str, ...] = ("xyx", "xzx", "yxy", "yzy", "zxz", "zyz")
"""The twelve valid rotation sequences: six proper Euler, six Tait--Bryan (Sect. 2.1)."""
TAIT_BRYAN_SEQUENCES: tuple[str, ...] = ("xyz", "yzx", "zxy", "xzy", "zyx", "yxz")
SEQUENCES: tuple[str, ...] = PROPER_EULER_SEQUENCES + TAIT_BRYAN_SEQUENCES


def rot_x(angle: sp.Expr) -> sp.Matrix:
    """Elemental rotation about the X axis, ``R_phi`` of Eq. (2.23).

    Parameters
    ----------
    angle : sympy expression
        Rotation angle (counterclockwise).

    Returns
    -------
    sympy.Matrix, shape (3, 3)
        ``[[1, 0, 0], [0, c, -s], [0, s, c]]``.
    """
    c, s = sp.cos(angle), sp.sin(angle)
    return sp.Matrix([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(angle: sp.Expr) -> sp.Matrix:
    """Elemental rotation about the Y axis, ``R_theta`` of Eq. (2.25).

    Returns
    -------
    sympy.Matrix, shape (3, 3)
        ``[[c, 0, s], [0, 1, 0], [-s, 0, c]]``.
    """
    c, s = sp.cos(angle), sp.sin(angle)
    return sp.Matrix([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(angle: sp.Expr) -> sp.Matrix:
    """Elemental rotation about the Z axis, ``R_psi`` of Eq. (2.23).

    Returns
    -------
    sympy.Matrix, shape (3, 3)
        ``[[c, -s, 0], [s, c, 0], [0, 0, 1]]``.
    """
    c, s = sp.cos(angle), sp.sin(angle)
    return sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]])


_ELEMENTAL = {"x": rot_x, "y": rot_y, "z": rot_z}


def euler_rotation(seq: str, angles: Sequence[sp.Expr]) -> sp.Matrix:
    """Orientation matrix of a rotation sequence, e.g. Eq. (2.24) (``"zxz"``) or (2.26) (``"zxy"``).

    The product is taken in sequence order, ``R = R_1(q_1) R_2(q_2) R_3(q_3)``,
    i.e. intrinsic rotations from the global frame towards the body frame.

    Parameters
    ----------
    seq : str
        One of the 12 sequences in [`SEQUENCES`][nhcontrol.modeling.SEQUENCES] (case-insensitive,
        e.g. ``"ZXY"``).
    angles : sequence of 3 sympy expressions
        The three angles in sequence order.

    Returns
    -------
    sympy.Matrix, shape (3, 3)

    Raises
    ------
    ModelError
        If ``seq`` is not one of the 12 sequences or ``angles`` does not hold 3 angles.

    Examples
    --------
    >>> import sympy as sp
    >>> psi, phi, theta = sp.symbols("psi phi theta")
    >>> euler_rotation("zxy", (psi, phi, theta)) == rot_z(psi) * rot_x(phi) * rot_y(theta)
    True
    """
    key = str(seq).lower()
    if key not in SEQUENCES:
        raise ModelError(f"unknown rotation sequence {seq!r}; expected one of the 12 sequences "
                         f"{list(SEQUENCES)} (proper Euler: same first and third axis; "
                         f"Tait-Bryan: three distinct axes)")
    angles = tuple(angles)
    if len(angles) != 3:
        raise ModelError(f"euler_rotation({seq!r}, angles) needs 3 angles, got {len(angles)}: {angles}")
    R = sp.eye(3)
    for axis, q in zip(key, angles):
        R = R * _ELEMENTAL[axis](sp.sympify(q))
    return R


__all__ = ["rot_x", "rot_y", "rot_z", "euler_rotation", "SEQUENCES",
           "PROPER_EULER_SEQUENCES", "TAIT_BRYAN_SEQUENCES"]

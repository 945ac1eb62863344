"""The kernel layout shared by the generators and the loader, free of SymPy.

Argument groups, kernel signatures, the fields of the fused functions and the generator
versions: what a cached model needs to be loaded and called (``nhcontrol.compiled.model``,
``cache``, ``cbackend``) without importing SymPy (a warm start, docs/guide/performance.md).
`nhcontrol.compiled.derivatives`, ``codegen`` and ``ccodegen`` re-export these names.
"""

from __future__ import annotations

GENERATOR_VERSION = "nhcontrol-codegen-14"
"""Bumped whenever the generated code changes (part of the cache key)."""

C_GENERATOR_VERSION = "c10"
"""Bumped whenever the generated C code changes (part of the shared library's file name)."""

ARG_PREFIX = {"x": "X", "xd": "XD", "xdd": "XDD", "a": "A", "lam": "L", "v": "V", "u": "U", "p": "P",
              "ud": "UD"}
"""Argument groups and the prefix of their canonical names in generated code."""

KERNEL_SIGNATURES: dict[str, tuple[str, ...]] = {
    "M": ("x", "u", "p"), "Q": ("x", "xd", "u", "p"), "C": ("x", "u", "p"),
    "Cx": ("x", "u", "p"), "B": ("x", "u", "p"), "D": ("x", "u", "p"), "Qd": ("x", "xd", "u", "p"),
    "dMa_dx": ("x", "a", "u", "p"), "dMa_du": ("x", "a", "u", "p"),
    "dDTlam_dx": ("x", "lam", "u", "p"),
    "dQ_dx": ("x", "xd", "u", "p"), "dQ_dxd": ("x", "xd", "u", "p"), "dQ_du": ("x", "xd", "u", "p"),
    "dDv_dx": ("x", "v", "u", "p"), "dDv_du": ("x", "v", "u", "p"),
    "dQd_dx": ("x", "xd", "u", "p"), "dQd_dxd": ("x", "xd", "u", "p"), "dQd_du": ("x", "xd", "u", "p"),
    "dCxv_dx": ("x", "v", "u", "p"), "dBv_dx": ("x", "v", "u", "p"), "dC_du": ("x", "u", "p"),
    "b": ("x", "u", "p"), "E": ("x", "xd", "u", "p"),
}
"""Kernel name -> argument groups (the table of contracts section 2)."""

LINEARIZATION_FIELDS = ("M", "Q", "D", "Cx", "B", "Qd", "dMa_dx", "dMa_du", "dDTlam_dx", "dQ_dx",
                        "dQ_dxd", "dQ_du", "dDv_dx", "dDa_dx", "dQd_dx", "dQd_dxd", "dCxv_dx",
                        "dBv_dx", "dQd_du", "dDa_du", "dC_du")
"""Field order of [`LinearizationTerms`][nhcontrol.compiled.LinearizationTerms]."""

_VECTOR_OUTPUTS = {"Q", "C", "Qd", "b"}

INPUT_RATE_FIELDS = ("E", "dEw_dx", "dEw_dxd", "dEw_du", "dDTlam_du")
"""Fields of [`InputRateTerms`][nhcontrol.compiled.InputRateTerms]: the terms of inputs that enter
the nonholonomic constraints, ``E = ∂(B ẋ + b)/∂u`` and the partial derivatives of ``E u̇0`` and
``Dᵀ Λ0`` (docs/theory/road_vehicles.md, "Inputs in the constraints")."""

RATE_FIELDS = ("H", "dH_dx", "dH_dxd", "dH_du")
"""Fields of [`RateTerms`][nhcontrol.compiled.RateTerms]: the rates ``ż = H(x, ẋ, u)`` of the
first-order states (Eqs. (7.12)-(7.13); the states ``z`` are inputs of the mechanics) and their
exact partial derivatives."""

OUTPUT_FIELDS = ("h", "dh_dx", "dh_dxd", "dh_du")
"""Fields of [`OutputTerms`][nhcontrol.compiled.OutputTerms]: the declared outputs
``y = h(x, ẋ, u)`` (`MultibodySystem.add_output`) and their exact partial derivatives."""

DYNAMICS_FIELDS = ("M", "Q", "D", "Qd")
"""Fields of [`DynamicsTerms`][nhcontrol.compiled.DynamicsTerms]."""

DIRECT_KERNELS = ("M", "C", "Cx", "B", "D", "b")
"""Kernels generated as functions of their own (small cones, used in inner loops)."""

ROUTES: dict[str, tuple[str, dict[str, str], str]] = {
    "Q": ("dynamics_terms", {"x": "x", "xd": "xd"}, "Q"),
    "Qd": ("dynamics_terms", {"x": "x", "xd": "xd"}, "Qd"),
    "dMa_dx": ("linearization_terms", {"x": "x", "a": "xdd"}, "dMa_dx"),
    "dMa_du": ("linearization_terms", {"x": "x", "a": "xdd"}, "dMa_du"),
    "dDTlam_dx": ("linearization_terms", {"x": "x", "lam": "lam"}, "dDTlam_dx"),
    "dQ_dx": ("linearization_terms", {"x": "x", "xd": "xd"}, "dQ_dx"),
    "dQ_dxd": ("linearization_terms", {"x": "x", "xd": "xd"}, "dQ_dxd"),
    "dQ_du": ("linearization_terms", {"x": "x", "xd": "xd"}, "dQ_du"),
    "dDv_dx": ("linearization_terms", {"x": "x", "v": "xd"}, "dDv_dx"),
    "dDv_du": ("linearization_terms", {"x": "x", "v": "xdd"}, "dDa_du"),
    "dQd_dx": ("linearization_terms", {"x": "x", "xd": "xd"}, "dQd_dx"),
    "dQd_dxd": ("linearization_terms", {"x": "x", "xd": "xd"}, "dQd_dxd"),
    "dQd_du": ("linearization_terms", {"x": "x", "xd": "xd"}, "dQd_du"),
    "dCxv_dx": ("linearization_terms", {"x": "x", "v": "xd"}, "dCxv_dx"),
    "dBv_dx": ("linearization_terms", {"x": "x", "v": "xd"}, "dBv_dx"),
    "dC_du": ("linearization_terms", {"x": "x"}, "dC_du"),
    "E": ("input_rate_terms", {"x": "x", "xd": "xd"}, "E"),
}
"""Every other kernel of the contract table is one output of a fused function, called with its
arguments placed into the fused argument list (missing ones are zero): kernel -> (function, {kernel
argument: fused argument}, output field).
"""

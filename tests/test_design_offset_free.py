"""Offset-free output-feedback MPC: a constant unmeasured input disturbance
on a linear plant measured through its outputs only. With the disturbance model estimated by
the Kalman filter (Muske & Badgwell 2002; Pannocchia & Rawlings 2003) the output offset is
removed; with the plain Kalman filter (no disturbance model) it remains. The controller object
gives the same loop through python-control (`to_iosystem`) as through `control(t, y)`."""

from __future__ import annotations

import control
import numpy as np
import pytest

from nhcontrol._util.errors import DesignError
from nhcontrol.design import OffsetFreeMPCController
from nhcontrol.systems import DiscreteLTV

from _toy_models import ZeroRef as _ZeroRef

H = 0.1
A = np.array([[1.0, H], [0.0, 1.0]])
B = np.array([[H * H / 2], [H]])
C = np.array([[1.0, 0.0]])                  # only the position is measured
DIST = 0.3                                   # unmeasured constant input disturbance
TIGHT = {"eps_abs": 1e-10, "eps_rel": 1e-10}


def _ctrl(disturbance, **kw):
    dsys = DiscreteLTV.from_lti(A, B, dt=H, steps=1, C=C)
    Qn = (np.diag([1e-6, 1e-6]), [[1e-3]]) if disturbance else np.diag([1e-6, 1e-6])
    return OffsetFreeMPCController(dsys, _ZeroRef(), 15, np.diag([10.0, 1.0]), np.eye(1),
                                   disturbance=disturbance, Qn=Qn, Rn=[[1e-4]], steps=400,
                                   u_min=-2.0, u_max=2.0, solver_options=TIGHT,
                                   outputs=("p_meas",), **kw)


def _loop(ctrl, K, s0=(1.0, 0.0)):
    s = np.array(s0, dtype=float)
    ys, us = [], []
    for k in range(K):
        y = C @ s
        u = ctrl.control(k * H, y)
        ys.append(y.copy())
        us.append(u.copy())
        s = A @ s + B @ (u + DIST)
    return np.array(ys), np.array(us), s


def test_disturbance_model_removes_the_offset_that_the_plain_filter_leaves():
    _, _, s_plain = _loop(_ctrl(None), 300)
    ctrl = _ctrl("input")
    ys, us, s = _loop(ctrl, 300)
    offset_plain = abs(s_plain[0])
    assert offset_plain > 0.1 * DIST             # no disturbance model: a steady offset
    # with it: the offset is gone to far below the plain one (tolerance relative to it)
    assert abs(s[0]) < 1e-6 * offset_plain and abs(s[1]) < 1e-6 * offset_plain
    xh, dh = ctrl.estimate
    assert dh == pytest.approx([DIST], abs=1e-6)             # the estimate is the disturbance
    assert us[-1] == pytest.approx([-DIST], abs=1e-6)        # the target input cancels it
    assert set(ctrl.statuses) == {"optimal"} and np.all(np.abs(us) <= 2.0 + 1e-9)


def test_target_is_the_steady_state_with_zero_tracked_output():
    ctrl = _ctrl("input")
    xs, us = ctrl.target(0, [0.25])
    np.testing.assert_allclose(A @ xs + B @ (us + 0.25), xs, atol=1e-12)
    np.testing.assert_allclose(C @ xs, [0.0], atol=1e-12)


def test_same_loop_in_python_control():
    K = 40
    ctrl = _ctrl("input")
    ys, us, _ = _loop(ctrl, K)
    ctrl.reset()
    io = ctrl.to_iosystem()
    assert io.input_labels == ["p_meas"] and io.output_labels == ["f"]
    assert io.state_labels == ["f_prev", "started", "xhat[0]", "xhat[1]", "dhat[0]"]
    plant = control.ss(A, np.hstack([B, B]), C, 0, dt=H, inputs=["f", "d"], outputs=["p_meas"],
                       states=["p", "v"], name="plant")
    loop = control.interconnect([plant, io], inplist=["d"], outlist=["p_meas", "f"])
    T = H * np.arange(K)
    resp = control.input_output_response(loop, T, DIST * np.ones((1, K)),
                                         np.concatenate([[1.0, 0.0], np.zeros(io.nstates)]))
    np.testing.assert_allclose(resp.outputs[0], ys[:, 0], atol=1e-8)
    np.testing.assert_allclose(resp.outputs[1], us[:, 0], atol=1e-8)


def test_errors():
    dsys = DiscreteLTV.from_lti(A, B, dt=H, steps=1, C=C)
    with pytest.raises(DesignError, match="not detectable"):
        # two disturbances from one measured output
        OffsetFreeMPCController(dsys, _ZeroRef(), 5, np.eye(2), np.eye(1), C=C,
                                disturbance=(np.hstack([B, B]), np.zeros((1, 2))),
                                Qn=np.eye(4), Rn=[[1.0]])
    with pytest.raises(DesignError, match="disturbance must be"):
        OffsetFreeMPCController(dsys, _ZeroRef(), 5, np.eye(2), np.eye(1), C=C,
                                disturbance="state", Qn=np.eye(3), Rn=[[1.0]])
    with pytest.raises(DesignError, match="measurement="):
        _ctrl("input")(0.0, [0.0], [0.0])

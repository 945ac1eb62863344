"""Application studies built on the pipeline: library logic that serves one study, kept out of
the pipeline's stages (``docs/dev/contracts.md``; tests/test_architecture.py enforces the layer).

* [`nhcontrol.applications.lane_change`][nhcontrol.applications.lane_change] — the ISO 3888-1
  double lane change of the single-track vehicles: reference, LTV system, LTV-MPC or
  finite-horizon LQR closed loops, the tyre plant.
* [`nhcontrol.applications.verify`][nhcontrol.applications.verify] — Monte-Carlo verification of
  a closed loop over sampled uncertainties (on the back-ends of ``nhcontrol.sweep``).
* [`nhcontrol.applications.output_feedback`][nhcontrol.applications.output_feedback] — the
  output-feedback studies: ball-plate LQG, bicycle EKF, sensor models.
* [`nhcontrol.applications.ball_plate_control`][nhcontrol.applications.ball_plate_control] — the
  ball-plate tracking controllers of ``reproduce nmpc`` (TV-LQR, LTV-MPC, RTI NMPC) and their
  estimators, as objects (``nhcontrol export-c ball_plate --controller``).
* [`nhcontrol.applications.bicycle_turn`][nhcontrol.applications.bicycle_turn] — the benchmark
  bicycle's optimal countersteer into a steady turn, tracked by LTV-MPC
  (``reproduce trajectory-optimization``).

The layer may import the pipeline's stages (``modeling`` … ``simulate``), ``models`` and
``sweep``; no stage imports it, only the edge (``reproduce``, ``cli``, ``plotting``) does.
The former top-level paths ``nhcontrol.lane_change_control``, ``nhcontrol.verify`` and
``nhcontrol.output_feedback_studies`` keep working (they re-export these modules' names).
Submodules are imported when first used (``import nhcontrol.applications`` is cheap).
"""

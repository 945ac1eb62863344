"""Contact helpers, one module each (docs/dev/contracts.md section 1).

Each function adds constraints to a [`MultibodySystem`][nhcontrol.modeling.MultibodySystem] and
returns a small frozen record of what it added.
"""

from .elliptic_torus import EllipticTorusContact, elliptic_torus
from .knife_edge import KnifeEdgeContact, knife_edge
from .rolling_hoop import RollingHoopContact, rolling_hoop
from .sphere_plane import SphereOnPlaneContact, sphere_on_moving_plane

__all__ = ["elliptic_torus", "EllipticTorusContact", "knife_edge", "KnifeEdgeContact", "rolling_hoop", "RollingHoopContact",
           "sphere_on_moving_plane", "SphereOnPlaneContact"]

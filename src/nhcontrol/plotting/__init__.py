"""nhcontrol.plotting — figures and animations in the house style (see docs/dev/contracts.md).

- [`nhcontrol.plotting.style`][nhcontrol.plotting.style]: palette, fonts, widths, captions, saving;
- [`animate()`][nhcontrol.plotting.animate]: GIF/MP4 of a simulation (scenes in
  [`nhcontrol.plotting.animation`][nhcontrol.plotting.animation]);
- stability, ball-plate and Monte-Carlo figures in their modules.
"""

from .animation import animate

__all__ = ["animate"]

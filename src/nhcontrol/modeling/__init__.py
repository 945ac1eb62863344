"""nhcontrol.modeling (see docs/dev/contracts.md)."""

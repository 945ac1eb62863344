"""nhcontrol.simulate (see docs/dev/contracts.md)."""

"""nhcontrol.design (see docs/dev/contracts.md)."""

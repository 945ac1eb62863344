"""nhcontrol.reference (see docs/dev/contracts.md)."""

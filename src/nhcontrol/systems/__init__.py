"""nhcontrol.systems (see docs/dev/contracts.md)."""

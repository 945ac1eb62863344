"""nhcontrol.compiled (see docs/dev/contracts.md)."""

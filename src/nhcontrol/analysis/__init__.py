"""nhcontrol.analysis (see docs/dev/contracts.md)."""

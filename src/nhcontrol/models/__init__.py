"""nhcontrol.models (see docs/dev/contracts.md)."""

"""nhcontrol.plotting (see docs/dev/contracts.md)."""

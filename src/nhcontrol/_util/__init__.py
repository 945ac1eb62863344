"""Internal utilities shared by every stage (errors, validation, tolerances)."""

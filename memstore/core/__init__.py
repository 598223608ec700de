"""Pure foundation: validation, text, tenancy and input shapes; no I/O."""

"""Database-side security features (opt-in)."""

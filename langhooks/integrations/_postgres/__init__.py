"""PostgreSQL: the run stores and their versioned schema."""

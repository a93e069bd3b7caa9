"""Persistence: values as JSON, event records, run state and run stores."""

"""The handler contract: events, messages, streams, callbacks, models."""

"""The Google ADK bridge: a ``BasePlugin`` that fires langhooks events."""

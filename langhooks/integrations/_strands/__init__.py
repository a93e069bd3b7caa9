"""The Strands Agents bridge: a ``HookProvider`` that fires langhooks events."""

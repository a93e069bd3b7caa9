"""The pydantic-ai bridge: ``LangHooksCapability`` (``_capability``) and the
translation of pydantic-ai's messages (``_messages``)."""

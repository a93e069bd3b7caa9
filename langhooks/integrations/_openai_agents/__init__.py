"""The OpenAI Agents SDK bridge: ``LangHooksRunHooks`` (``_hooks``), the model
wrapper that hears the raw stream (``_model``) and the translations (``_convert``)."""

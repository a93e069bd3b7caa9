"""The MCP integration's implementation (``langhooks.integrations.mcp`` is its
public surface)."""

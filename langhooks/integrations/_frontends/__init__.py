"""The frontend protocols (AG-UI, the AI SDK's UI messages) and their apps."""

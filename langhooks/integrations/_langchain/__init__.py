"""The LangChain / LangGraph bridge (``langhooks.integrations.langchain``)."""

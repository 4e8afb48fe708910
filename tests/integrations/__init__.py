"""The framework integrations (LangChain, LlamaIndex, Haystack), against the real packages."""

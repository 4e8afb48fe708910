"""quotebound as the verification layer of the RAG stacks people already run.

One module per framework, each an optional extra that imports its framework on first use:

- ``quotebound.integrations.langchain`` (``pip install 'quotebound[langchain]'``):
  ``working_set`` from ``Document``s, the citation contract as a ``ChatPromptTemplate``, the
  ``QuoteboundVerifier`` Runnable, a chat model as a provider and a retriever feeding ``ask``;
- ``quotebound.integrations.llamaindex`` (``[llamaindex]``): a working set from
  ``NodeWithScore``s, ``verify_response`` for a ``Response`` (``CitationQueryEngine``'s
  ``[n]`` markers included) and ``VerifiedQueryEngine``, wrapping any query engine;
- ``quotebound.integrations.haystack`` (``[haystack]``): ``QuoteboundPromptBuilder`` and
  ``VerifiedAnswerBuilder`` components for a ``Pipeline``.

What they share (``common``): documents into ``Source``s exactly as sent (S1..Sn in the
order given, so a model's ``[n]`` names the n-th), the model's reply verified by
``pipeline.check_answer`` (the same checks, support tier and re-anchoring as ``ask``), a
``Checked`` result, and the trace written to a quotebound store when one is given, so the
cards and the web page work for answers that came through the user's own stack. The core
never imports a framework (the layer contracts in ``pyproject.toml``).
"""

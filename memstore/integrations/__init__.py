"""Adapters to agent frameworks; each module needs its own extra and is imported on demand.

- :mod:`memstore.integrations.langgraph` (``memstore[langgraph]``): a LangGraph ``BaseStore``.
- :mod:`memstore.integrations.openai_agents` (``memstore[openai-agents]``): an Agents SDK session.
"""

__all__: list[str] = []

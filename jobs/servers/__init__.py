"""The long-running servers, apart from the batch jobs: the Prolog MCP server (:mod:`.mcp`) and the
results viewer (:mod:`.view`). Batch jobs and methods never import them (tests/test_layering.py)."""

"""SWI-Prolog: the `prolog` language, stateful sessions (the MCP server's), and the PARARULE-Plus agent."""

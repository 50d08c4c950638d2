"""SWI-Prolog as a stateful tool for agents: the ``symbolkg mcp serve`` MCP server.

The server speaks the Model Context Protocol through the official SDK's low-level
:class:`mcp.server.lowlevel.Server`, which lets every tool publish an explicit input
schema *and* output schema, return ``structuredContent`` (also on errors, with
``isError`` set), carry readOnly / destructive / idempotent annotations, report
progress and be cancelled. (The SDK's decorator front end, ``MCPServer``, derives
schemas from type hints and turns every error into plain text, which loses the
structured error the agent repairs its program from.)

Layers of one call::

    MCP client --stdio | Streamable HTTP (+ bearer token)--> PrologMCPServer.call_tool
        -> validate the arguments against the tool's input schema (quick_check first), fill defaults
        -> SessionRegistry.get(load_id) -> PrologSession.<method>   (in a worker thread)
           (run_goal on an idle session: SessionRegistry.peek -> PrologSession.start_run_goal,
            the reply awaited on the event loop: await_reply)
        -> {"ok": true, ...}  |  {"ok": false, "error": {kind, message, prolog_term}} + isError

* **Sessions** live in a :class:`symbolkg.solvers.prolog.session_registry.SessionRegistry`:
  one ``swipl`` process per ``load_id`` with its own module, temp directory and OS
  limits, an LRU cap and an idle TTL. Sessions belong to the server, not to an MCP
  connection: a ``load_id`` is a capability that any client holding the server's
  token may use (one token = one trust domain; run one server per tenant).
* **Concurrency.** Session calls block, so they run in worker threads
  (``anyio.to_thread``) under a limiter sized to the session cap: calls on one session
  are serialized by the session, calls on different sessions run in parallel. The hot
  path is the exception: a ``run_goal`` on an idle session is sent from the event loop
  and its reply read when the session's pipe becomes readable
  (:meth:`PrologSession.start_run_goal`), so a short query crosses no thread of ours; a
  busy session, or a call that the loop cannot start at once, takes the worker-thread path.
* **stdio** is read and written on the event loop (:func:`serve_stdio`), not through the
  SDK's default file wrappers, which hand every line read, write and flush to a worker
  thread: three thread hand-offs per request, each a wait for a time slice on a busy machine.
* **Long calls** (``run_goal``, ``next_answers``, ``trace_goal``, ``run_tests``,
  ``solve_program``) send ``notifications/progress`` every ``progress_interval_s``
  while they run, when the client sent a progress token. When the client cancels
  the request (``notifications/cancelled``) the server calls
  :meth:`PrologSession.cancel` (:meth:`PendingRun.cancel` for a goal started from the
  event loop, whose reply a daemon thread then reads), which stops the goal and keeps
  the session.
* **Errors are data.** A tool never raises into the SDK: a Prolog error, an unknown /
  evicted / expired / lost session or bad arguments come back as a tool result with
  ``isError`` and the error record in ``structuredContent``; the session stays usable.
* **solve_program** runs any program language of ``symbolkg solve`` (Z3, Prover9,
  Logic-LM LP / FOL / CSP / SMT, Prolog, SymBa) on the isolated solver workers of
  :class:`symbolkg.solvers.runtime.local_pool.LocalSolverPool`, started on first use and closed
  with the server.
* **HTTP** is the SDK's Streamable HTTP app behind :class:`BearerTokenMiddleware`
  (constant-time comparison, 401 otherwise); :func:`check_http_options` refuses a
  non-loopback host without a token.

The modules: :mod:`.start` (no SDK: the settings, the stdio pipes, the early answer to
``initialize``, so that a client is answered before the SDK is imported, about a second of CPU);
:mod:`.tools` (each tool's schemas and annotations, the fast argument check); :mod:`.server`
(:class:`~.server.PrologMCPServer`: the calls on the session layer,
:mod:`symbolkg.solvers.prolog.session_registry`); :mod:`.transport` (stdio, HTTP behind a bearer
token, ``main``). This package imports none of them: ``mcp serve`` imports the SDK only after
``initialize`` is answered.
"""

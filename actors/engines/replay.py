"""The content-addressed completion cache and the engines built on it (the ``replay`` backend).

* :class:`CompletionCache` maps ``ChatRequest.cache_key(model)`` to the completion that
  the model once gave, with the token counts of that original generation. It is a folder
  holding one SQLite file in WAL mode (plus SQLite's ``-wal``/``-shm`` side files): several
  processes (Ray actors, two runs) may read and write it at once.
* :class:`ReplayEngine` answers only from a cache; a miss is an :class:`EngineError`. A run
  replayed this way is exactly reproducible and needs no model.
* :class:`CachingEngine` puts any engine behind a cache (write-through): hits are served
  from the cache, only the misses reach the inner engine, and what it returns is stored.

Cost of a replay: a completion served from the cache has ``cached=True`` and
``prompt_tokens == completion_tokens == 0``, because it cost nothing in this run (this is
what :class:`~symbolkg.actors.engines.base.Completion` documents). The original counts stay in the
cache (:class:`CachedCompletion`) for anyone who wants what the first run spent.

What is cached: every completion an engine *returned*, whatever its ``finish_reason`` (a
truncated ``"length"`` completion is what that prompt gives with that ``max_tokens``, and
``max_tokens`` is part of the key). Errors are never cached: a failed request is asked again
next time. The first completion stored under a key wins; later puts of the same key are
ignored, so a key replays the same text forever (even for sampled requests).

Keys do not include ``problem_id``/``purpose``/``request_id``: two problems with the same
prompt share one completion (see :meth:`ChatRequest.cache_key`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError, LLMEngine
from symbolkg.solvers.outcomes import Deadline

SCHEMA_VERSION = "1"
"""Bumped when the table layout changes; an old file is then refused, not misread."""

DB_NAME = "completions.sqlite"
"""The SQLite file inside the cache folder."""

_SQL_CHUNK = 500  # keys per ``IN (...)`` query, well under SQLite's bound-parameter limit


class CacheError(RuntimeError):
    """The cache file cannot be used: not a SQLite file, another schema version, I/O error, closed."""


@dataclass(frozen=True)
class CachedCompletion:
    """One stored completion, as the engine first returned it.

    Attributes:
        text: the generated text.
        prompt_tokens: prompt tokens of the original generation.
        completion_tokens: generated tokens of the original generation.
        finish_reason: ``"stop"``, ``"length"``, ...
        model: the model that produced it (``Completion.model``).
        created_at: Unix time at which it was stored.
        structured: the output was constrained by the request's ``structured``.
        latency_s: the original generation's latency.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    model: str
    created_at: float
    structured: bool = False
    latency_s: float = 0.0

    @classmethod
    def from_completion(cls, completion: Completion, *, created_at: float | None = None) -> CachedCompletion:
        """The record to store for a freshly generated ``completion``.

        Raises:
            ValueError: ``completion.cached`` is True: a cache hit carries zero token counts,
                so storing it would lose the original cost; store the original instead.
        """
        if completion.cached:
            raise ValueError("refusing to store a cached completion (its token counts are zero); store the original")
        return cls(
            text=completion.text,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            finish_reason=completion.finish_reason,
            model=completion.model,
            created_at=time.time() if created_at is None else created_at,
            structured=completion.structured,
            latency_s=completion.latency_s,
        )

    def to_completion(self, *, latency_s: float = 0.0) -> Completion:
        """This record served as a cache hit: ``cached=True`` and zero tokens (a replay is free); what
        the model spent on it first is kept as ``stored_tokens``.

        Args:
            latency_s: the time the lookup took (not the original generation's).
        """
        return Completion(
            text=self.text,
            prompt_tokens=0,
            completion_tokens=0,
            latency_s=latency_s,
            finish_reason=self.finish_reason,
            model=self.model,
            cached=True,
            structured=self.structured,
            stored_tokens=(self.prompt_tokens, self.completion_tokens),
        )


_COLUMNS = "text, prompt_tokens, completion_tokens, finish_reason, model, created_at, structured, latency_s"


def _record(row: Sequence[Any]) -> CachedCompletion:
    text, prompt_tokens, completion_tokens, finish_reason, model, created_at, structured, latency_s = row
    return CachedCompletion(
        text=text,
        prompt_tokens=int(prompt_tokens),
        completion_tokens=int(completion_tokens),
        finish_reason=finish_reason,
        model=model,
        created_at=float(created_at),
        structured=bool(structured),
        latency_s=float(latency_s),
    )


class CompletionCache:
    """A map from cache key to :class:`CachedCompletion`, stored in a folder (one SQLite file).

    Safe for concurrent use: from threads sharing one object (a lock serialises its single
    connection) and from several objects or processes on the same path (SQLite's WAL mode:
    readers never block, writers wait up to ``busy_timeout_s`` for each other). WAL needs a
    local file system (not NFS).

    It also remembers, per model, whether the engine that filled it enforced structured
    output (:meth:`set_supports_structured`), so a replay can build the same requests.

    The object pickles as its path and options, so it can be handed to a Ray actor, which
    then opens its own connection.

    Example:
        >>> import tempfile, os
        >>> from symbolkg.actors.engines.base import Completion
        >>> cache = CompletionCache(os.path.join(tempfile.mkdtemp(), "cache"))
        >>> cache.put("k1", Completion("All cats are mammals.", prompt_tokens=7, completion_tokens=5))
        True
        >>> cache.get("k1").completion_tokens, "k1" in cache, len(cache)
        (5, True, 1)
        >>> cache.close()
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> None:
        """Open (or create) the cache folder ``path`` and its ``completions.sqlite``.

        Args:
            path: the cache folder, e.g. ``runs/cache``; created (with parents) if missing.
            busy_timeout_s: how long a write waits for another writer before failing.

        Raises:
            CacheError: ``path`` is a file, its database is not a SQLite file or holds
                another schema version.
            ValueError: ``busy_timeout_s`` is not positive.
        """
        if busy_timeout_s <= 0:
            raise ValueError(f"busy_timeout_s must be > 0, got {busy_timeout_s}")
        self.path = Path(path)
        self.db_path = self.path / DB_NAME
        self.busy_timeout_s = busy_timeout_s
        if self.path.exists() and not self.path.is_dir():
            raise CacheError(f"completion cache {str(self.path)!r} is a file; the cache is a folder (give a new path)")
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        try:
            # check_same_thread=False: engines call the cache through asyncio.to_thread, so
            # one connection is used from several threads, one at a time under self._lock.
            self._conn = sqlite3.connect(
                self.db_path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._init_schema_with_retry(self._conn)
        except BaseException as exc:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if isinstance(exc, sqlite3.Error):
                raise CacheError(f"cannot open completion cache {str(self.db_path)!r}: {exc}") from exc
            raise

    def _init_schema_with_retry(self, conn: sqlite3.Connection) -> None:
        """Create the tables, retrying while other connections are creating them too.

        SQLite's busy handler does not cover every lock conflict: when several connections
        open a brand-new file at once, switching it to WAL can fail at once with "database
        is locked" (SQLite refuses to wait there to avoid deadlock). Every step below is
        idempotent, so it is tried again until ``busy_timeout_s`` has passed.
        """
        deadline = Deadline(self.busy_timeout_s)
        delay_s = 0.005
        while True:
            try:
                self._init_schema(conn)
                return
            except sqlite3.OperationalError as exc:
                code = getattr(exc, "sqlite_errorcode", None)
                if code is None or code & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                    raise
                if deadline.remaining() < delay_s:
                    raise
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                time.sleep(delay_s)
                delay_s = min(delay_s * 2, 0.2)

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable against a crashed process under WAL; only a power loss may drop the
        # last transactions, which for a cache only means asking the model again.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS completions ("
                " key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,"
                " completion_tokens INTEGER NOT NULL, finish_reason TEXT NOT NULL, model TEXT NOT NULL,"
                " created_at REAL NOT NULL, structured INTEGER NOT NULL, latency_s REAL NOT NULL)"
            )
            conn.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            (version,) = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if version != SCHEMA_VERSION:
            raise CacheError(
                f"completion cache {str(self.path)!r} has schema version {version}, this code reads {SCHEMA_VERSION}; "
                "use another path"
            )

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise CacheError(f"completion cache {str(self.path)!r} is closed")
        return self._conn

    def get(self, key: str) -> CachedCompletion | None:
        """The record stored under ``key``, or None."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedCompletion]:
        """The records stored under any of ``keys`` (missing keys are absent from the result).

        Raises:
            CacheError: the cache is closed or the file cannot be read.
        """
        unique = list(dict.fromkeys(keys))
        found: dict[str, CachedCompletion] = {}
        with self._lock:
            conn = self._connection()
            try:
                for start in range(0, len(unique), _SQL_CHUNK):
                    chunk = unique[start : start + _SQL_CHUNK]
                    marks = ",".join("?" * len(chunk))
                    query = f"SELECT key, {_COLUMNS} FROM completions WHERE key IN ({marks})"
                    for key, *row in conn.execute(query, chunk):
                        found[key] = _record(row)
            except sqlite3.Error as exc:
                raise CacheError(f"cannot read completion cache {str(self.path)!r}: {exc}") from exc
        return found

    def put(self, key: str, completion: Completion) -> bool:
        """Store ``completion`` under ``key`` unless the key is already there.

        Returns:
            True when stored, False when the key already had a completion (the first one wins).

        Raises:
            ValueError: an empty key, or ``completion.cached`` (see :meth:`CachedCompletion.from_completion`).
            CacheError: the cache is closed or the write failed (e.g. locked past ``busy_timeout_s``).
        """
        return self.put_many([(key, completion)]) == 1

    def put_many(self, items: Iterable[tuple[str, Completion]]) -> int:
        """Store several completions in one transaction; keys already present are left alone.

        Returns:
            How many were newly stored.

        Raises:
            ValueError: an empty key or a cached completion (nothing is stored then).
            CacheError: the cache is closed or the write failed (nothing is stored then).
        """
        now = time.time()
        rows = []
        for key, completion in items:
            if not key:
                raise ValueError("cache keys must be non-empty")
            r = CachedCompletion.from_completion(completion, created_at=now)
            rows.append(
                (
                    key,
                    r.text,
                    r.prompt_tokens,
                    r.completion_tokens,
                    r.finish_reason,
                    r.model,
                    r.created_at,
                    int(r.structured),
                    r.latency_s,
                )
            )
        if not rows:
            return 0
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    before = conn.total_changes
                    insert = f"INSERT OR IGNORE INTO completions (key, {_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)"
                    conn.executemany(insert, rows)
                    stored = conn.total_changes - before
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise CacheError(f"cannot write completion cache {str(self.path)!r}: {exc}") from exc
        return stored

    def set_supports_structured(self, model: str, supports_structured: bool) -> None:
        """Remember whether ``model``'s engine enforced structured output (the last call wins).

        Raises:
            CacheError: the cache is closed or the write failed.
        """
        with self._lock:
            conn = self._connection()
            try:
                conn.execute(
                    "INSERT INTO meta (name, value) VALUES (?, ?)"
                    " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    (f"supports_structured:{model}", "1" if supports_structured else "0"),
                )
            except sqlite3.Error as exc:
                raise CacheError(f"cannot write completion cache {str(self.path)!r}: {exc}") from exc

    def supports_structured(self, model: str) -> bool | None:
        """What :meth:`set_supports_structured` recorded for ``model``; None when nothing was.

        Raises:
            CacheError: the cache is closed or cannot be read.
        """
        with self._lock:
            conn = self._connection()
            try:
                query = "SELECT value FROM meta WHERE name = ?"
                row = conn.execute(query, (f"supports_structured:{model}",)).fetchone()
            except sqlite3.Error as exc:
                raise CacheError(f"cannot read completion cache {str(self.path)!r}: {exc}") from exc
        return None if row is None else row[0] == "1"

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __len__(self) -> int:
        with self._lock:
            conn = self._connection()
            try:
                (count,) = conn.execute("SELECT COUNT(*) FROM completions").fetchone()
            except sqlite3.Error as exc:
                raise CacheError(f"cannot read completion cache {str(self.path)!r}: {exc}") from exc
        return int(count)

    def close(self) -> None:
        """Close the connection. Idempotent; later use raises CacheError."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> CompletionCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        # A connection cannot cross processes: the copy reopens the file.
        return (functools.partial(type(self), busy_timeout_s=self.busy_timeout_s), (self.path,))

    def __repr__(self) -> str:
        return f"CompletionCache({str(self.path)!r})"


def _describe(request: ChatRequest) -> str:
    return f"problem {request.problem_id!r}, purpose {request.purpose!r}, request {request.request_id!r}"


def _as_replay(completion: Completion) -> Completion:
    """A completion handed out again without a new generation: cached, and free (what the model spent
    on it stays in ``stored_tokens``)."""
    stored = completion.stored_tokens or (completion.prompt_tokens, completion.completion_tokens)
    return dataclasses.replace(completion, cached=True, prompt_tokens=0, completion_tokens=0, stored_tokens=stored)


class ReplayEngine:
    """An engine that answers only from a :class:`CompletionCache`.

    Requests must be built exactly as in the recorded run (same messages, params and
    structured constraint) under the same ``model`` name, or their keys differ and miss.

    Attributes:
        model: the model name the cache was filled under (part of every key).
        supports_structured: what the engine that filled the cache claimed, since callers
            that add a structured constraint only when it is supported would otherwise
            build different requests (and keys).
    """

    def __init__(self, cache: CompletionCache, model: str, *, supports_structured: bool | None = None) -> None:
        """Build the engine. The cache stays the caller's: :meth:`close` does not close it.

        Args:
            cache: the cache to answer from.
            model: the model name the cache was filled under.
            supports_structured: what to claim; None takes what the cache recorded for
                ``model`` (written by :class:`CachingEngine`), or False if nothing was.

        Raises:
            ValueError: an empty model name.
            CacheError: the cache cannot be read.
        """
        if not model:
            raise ValueError("model must be a non-empty name (it is part of every cache key)")
        self.model = model
        if supports_structured is None:
            supports_structured = bool(cache.supports_structured(model))
        self.supports_structured = supports_structured
        self._cache = cache
        self._closed = False

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Serve every request from the cache (``cached=True``, zero tokens).

        Raises:
            EngineError: a request has no cached completion (the batch fails as a whole; the
                message names the request and its key).
            EngineDeadError: the engine was closed.
            CacheError: the cache file cannot be read.
        """
        if self._closed:
            raise EngineDeadError(f"replay engine {self.model!r} is closed")
        started = time.perf_counter()
        requests = list(requests)
        keys = [r.cache_key(self.model) for r in requests]
        found = await asyncio.to_thread(self._cache.get_many, keys)
        for request, key in zip(requests, keys, strict=True):
            if key not in found:
                raise EngineError(
                    f"replay miss: no cached completion of model {self.model!r} for {_describe(request)} "
                    f"(key {key}) in cache {str(self._cache.path)!r}"
                )
        latency_s = time.perf_counter() - started
        return [found[k].to_completion(latency_s=latency_s) for k in keys]

    async def close(self) -> None:
        """Mark the engine closed. Idempotent."""
        self._closed = True


class CachingEngine:
    """Write-through cache in front of another engine.

    For each ``generate`` call: requests whose key is cached are answered from the cache;
    the others (each distinct key once) go to ``inner`` in a single ``generate`` call, in
    their original order, and what it returns is stored before being handed back. The
    result is in request order.

    Token accounting stays truthful: only a completion that ``inner`` generated for this
    call carries token counts. Cache hits, repeats of a key within one batch, and
    completions shared with a concurrent call (below) are ``cached=True`` with zero tokens.

    Concurrent calls asking for the same key while it is being generated share that one
    generation instead of sending it twice. If that generation fails, each waiting call
    asks again itself, so an error from another caller's batch never becomes theirs.
    (This sharing lives in one event loop: use one CachingEngine per loop. Across
    processes, two concurrent misses of one key are both generated; the first stored wins.)

    Errors of ``inner`` propagate unchanged and nothing of the failed batch is stored.
    Completions that ``inner`` marks ``cached`` (an inner cache) are passed on but not stored.

    Attributes:
        hits: requests answered without a new generation (cache, repeat or shared).
        misses: distinct requests sent to ``inner``.
    """

    def __init__(self, inner: LLMEngine, cache: CompletionCache) -> None:
        """Wrap ``inner``. :meth:`close` closes ``inner``; the cache stays the caller's."""
        self._inner = inner
        self._cache = cache
        self._inflight: dict[str, asyncio.Future[Completion | None]] = {}
        self._closed = False
        self._noted_structured = False
        self.hits = 0
        self.misses = 0

    @property
    def model(self) -> str:
        """The inner engine's model (keys are computed with it)."""
        return self._inner.model

    @property
    def supports_structured(self) -> bool:
        """The inner engine's answer."""
        return self._inner.supports_structured

    @property
    def inner(self) -> LLMEngine:
        """The wrapped engine."""
        return self._inner

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Answer ``requests`` from the cache where possible, the rest from ``inner``.

        Raises:
            EngineError: from ``inner`` (nothing of that batch is stored), or ``inner``
                returned the wrong number of completions.
            EngineDeadError: this engine was closed, or from ``inner``.
            CacheError: the cache file cannot be read or written.
        """
        if self._closed:
            raise EngineDeadError(f"caching engine over {self.model!r} is closed")
        model = self.model
        requests = list(requests)
        keys = [r.cache_key(model) for r in requests]
        first: dict[str, ChatRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            first.setdefault(key, request)
        resolved: dict[str, Completion] = {}
        pending = list(first)
        while pending:
            pending = await self._resolve_round(pending, first, resolved)
        out: list[Completion] = []
        seen: set[str] = set()
        for key in keys:
            completion = resolved[key]
            if key in seen:
                completion = _as_replay(completion)
                self.hits += 1
            seen.add(key)
            out.append(completion)
        return out

    async def _resolve_round(
        self, pending: list[str], first: dict[str, ChatRequest], resolved: dict[str, Completion]
    ) -> list[str]:
        """Resolve ``pending`` keys into ``resolved``; returns the keys to try again.

        Keys nobody is working on are claimed (a future in ``_inflight``) and resolved by this
        call; keys another call has claimed are awaited. Own keys are finished before any
        wait, so two calls waiting on each other's keys cannot deadlock.
        """
        loop = asyncio.get_running_loop()
        own: dict[str, asyncio.Future[Completion | None]] = {}
        waits: dict[str, asyncio.Future[Completion | None]] = {}
        for key in pending:
            fut = self._inflight.get(key)
            if fut is None:
                fut = loop.create_future()
                self._inflight[key] = fut
                own[key] = fut
            else:
                waits[key] = fut
        try:
            if own:
                await self._fill(list(own), first, resolved)
        finally:
            # Results reach the cache before the claim is dropped, so a call that finds no
            # claim finds the completion in the cache. None tells waiters to ask themselves.
            for key, fut in own.items():
                del self._inflight[key]
                fut.set_result(resolved.get(key))
        retry: list[str] = []
        for key, fut in waits.items():
            # shield: a waiter being cancelled must not cancel the owner's shared future.
            shared = await asyncio.shield(fut)
            if shared is None:
                retry.append(key)
            else:
                resolved[key] = _as_replay(shared)
                self.hits += 1
        return retry

    async def _fill(self, keys: list[str], first: dict[str, ChatRequest], resolved: dict[str, Completion]) -> None:
        started = time.perf_counter()
        found = await asyncio.to_thread(self._cache.get_many, keys)
        latency_s = time.perf_counter() - started
        for key, record in found.items():
            resolved[key] = record.to_completion(latency_s=latency_s)
        self.hits += len(found)
        misses = [k for k in keys if k not in found]
        if not misses:
            return
        self.misses += len(misses)
        completions = await self._inner.generate([first[k] for k in misses])
        if len(completions) != len(misses):
            raise EngineError(
                f"engine {self.model!r} returned {len(completions)} completions for {len(misses)} requests"
            )
        model = self.model
        # A blank model name would make the stored record unattributable; the key's model is the truth.
        completions = [c if c.model else dataclasses.replace(c, model=model) for c in completions]
        fresh = [(k, c) for k, c in zip(misses, completions, strict=True) if not c.cached]
        if fresh:
            await asyncio.to_thread(self._store, fresh)
        for key, completion in zip(misses, completions, strict=True):
            resolved[key] = completion

    def _store(self, fresh: list[tuple[str, Completion]]) -> None:
        if not self._noted_structured:
            # Read from the inner engine only now: a lazily built engine knows it by the time
            # it has generated something.
            self._cache.set_supports_structured(self.model, self.supports_structured)
            self._noted_structured = True
        self._cache.put_many(fresh)

    async def close(self) -> None:
        """Close the inner engine (once). Idempotent; the cache is left open."""
        if self._closed:
            return
        self._closed = True
        await self._inner.close()

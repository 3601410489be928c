"""The Fleet feature: reads a `dpmlens fleet` store (`fleetStore` setting, else `[fleet] store`
of the workspace's `.dpmlens.toml`) and keeps its figures mapped onto the workspace
(fleet_state.FleetState), for CodeLens and hover over callbacks and delay calls.

The query (DuckDB, one thread) and the mapping run in a thread, one at a time; a request
made meanwhile runs once after it. The store is watched by its folders' mtimes
(fleet.store.Store.stamp: a few hundred stats, in a thread) every `poll_seconds()`: a new
ingest is queried again, an unchanged store never is. A store that is missing, corrupt,
newer than this dpmlens, or a machine without duckdb, gives one message (log and window)
per distinct problem and no figures; the server goes on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any

from lsprotocol import types

from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.fleet_state import FleetState
from dpmlens.lsp.settings import Settings
from dpmlens.lsp.trace_loader import Traces
from dpmlens.lsp.workspace_index import workspace_roots

_POLL = 5.0


def poll_seconds() -> float:
    """How often the store's stamp is checked (DPMLENS_FLEET_POLL overrides, e.g. tests)."""
    try:
        return max(0.05, float(os.environ.get("DPMLENS_FLEET_POLL", _POLL)))
    except ValueError:
        return _POLL


class StoreProblem(Exception):
    """The configured store cannot be used: the one line the user sees."""


def resolve_store(roots: list[str], setting: str) -> str:
    """The store folder: the setting (relative to the first workspace folder), else `[fleet]
    store` of the `.dpmlens.toml` governing the first folder that has one; "" for none."""
    from dpmlens.core.errors import ConfigError
    from dpmlens.fleet import thresholds

    if setting:
        path = os.path.expanduser(setting)
        if not os.path.isabs(path) and roots:
            path = os.path.join(roots[0], path)
        return os.path.normpath(path)
    for root in roots:
        try:
            found, where = thresholds.load(None, start=root)
        except ConfigError as exc:
            raise StoreProblem(f"{exc} (no fleet figures until it is fixed)") from None
        if where is not None and found.get("store"):
            return str(found["store"])
    return ""


def store_stamp(store: str) -> tuple[tuple[str, int], ...]:
    from dpmlens.fleet.store import Store

    return Store(store).stamp()


class Fleet(LanguageFeature):
    name = "fleet"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        self.state = FleetState()
        self.loads = 0  # finished loads (with figures or a problem)
        self._stamp: tuple[tuple[str, int], ...] | None = None
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._poller: asyncio.Task[None] | None = None
        self._told: str | None = None  # the problem last told to the user

    # -- lifecycle -------------------------------------------------------------------------

    def initialized(self) -> None:
        self.reload()
        self._poller = self._spawn(self._poll())

    def settings_changed(self, old: Settings, new: Settings) -> None:
        if old.fleet_store != new.fleet_store or old.path_mappings != new.path_mappings:
            self._stamp = None
            self.reload()

    def workspace_indexed(self) -> None:
        self.reload()  # drivers of files not yet indexed map (and are queried) now

    def index_updated(self, directory: str | None) -> None:
        if self.state.store:
            self.reload()  # new drivers are queried; the same ones only re-mapped

    def shutdown(self) -> None:
        for t in (self._poller, self._task):
            if t is not None:
                t.cancel()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)

        def done(t: asyncio.Task[None]) -> None:
            if not t.cancelled() and (exc := t.exception()) is not None:
                self.server.log_exception("fleet", exc)

        task.add_done_callback(done)
        return task

    # -- loading ---------------------------------------------------------------------------

    def reload(self) -> None:
        """Load (or re-map) the figures soon; once more after a load that is running."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = self._spawn(self._load_loop())

    async def _load_loop(self) -> None:
        while True:
            self._again = False
            with self.server.guard("fleet (load)"):
                await self._load()
            if not self._again:
                return

    async def _load(self) -> None:
        from dpmlens.lsp.fleet_state import compute

        server = self.server
        loop = asyncio.get_running_loop()
        state = self.state
        try:
            store = await loop.run_in_executor(
                None, resolve_store, workspace_roots(server), server.settings.fleet_store)
        except StoreProblem as exc:
            self._fail(str(exc), None)
            return
        if store != state.store:
            state.store, self._stamp = store, None
            if state.result is not None:
                state.install(None)
                self._refresh()
        if not store:
            self._told = None
            return
        stamp: tuple[tuple[str, int], ...] | None = None
        try:
            stamp = await loop.run_in_executor(None, store_stamp, store)
            if not os.path.isdir(store):
                raise StoreProblem(f"{store}: no such folder")
            if stamp == self._stamp and state.result is None and self._told is not None:
                return  # failed before, and nothing changed since
            prev = state.result if stamp == self._stamp else None  # unchanged: no query
            inputs = server.get_feature(Traces).state.mapping_inputs(server)
            result = await loop.run_in_executor(
                None, compute, store, inputs["models"], inputs["map_path"], prev)
        except Exception as exc:  # noqa: BLE001 - every failure is one message, no figures
            self._fail(_problem_text(store, exc), stamp)
            return
        if store != state.store:
            return  # the setting changed meanwhile: the next load is queued
        same = (prev is not None and result.figures is prev.figures
                and result.callbacks == prev.callbacks)
        state.install(result)
        self._stamp = stamp
        self.loads += 1
        if prev is None:
            f = result.figures
            kernels = f.kernels[-1] if len(f.kernels) == 1 else (
                f"{f.kernels[0]} .. {f.kernels[-1]}" if f.kernels else "none")
            server.log("info", f"dpmlens: fleet store {store}: {f.cycles:,} cycles, kernels "
                               f"{kernels}; {len(result.callbacks)} callbacks and "
                               f"{len(f.delays)} delay sites to show")
        if self._told is not None:
            server.log("info", f"dpmlens: fleet store {store}: readable again")
            self._told = None
        if not same:  # a re-mapping that maps the same callbacks changes no lens
            self._refresh()

    def _fail(self, message: str, stamp: tuple[tuple[str, int], ...] | None) -> None:
        """No figures, one message; `stamp`: the store's when it failed (polled again only
        once it changes)."""
        self.loads += 1
        self._stamp = stamp
        if self.state.result is not None:
            self.state.install(None)
            self._refresh()
        if message != self._told:  # one message per problem, not one per poll
            self._told = message
            self.server.log("error", f"dpmlens: {message}")
            with self.server.guard("fleet (message)"):
                self.server.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Warning, message=f"dpmlens: {message}"))

    def _refresh(self) -> None:
        self.server.get_feature(Traces).refresh_lenses()

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(poll_seconds())
            if self._task is not None and not self._task.done():
                continue
            roots, setting = workspace_roots(self.server), self.server.settings.fleet_store
            changed = await loop.run_in_executor(None, self._changed, roots, setting)
            if changed:
                self.reload()

    def _changed(self, roots: list[str], setting: str) -> bool:
        """(thread) Is the store another (`.dpmlens.toml` edited) or has an ingest landed?"""
        try:
            store = resolve_store(roots, setting)
        except StoreProblem as exc:
            return str(exc) != self._told
        if store != self.state.store:
            return True
        if not store:
            return False
        try:
            return store_stamp(store) != self._stamp
        except ImportError:
            return False  # told once by the load


def _problem_text(store: str, exc: BaseException) -> str:
    from dpmlens.core.errors import UsageError

    if isinstance(exc, StoreProblem):
        return f"fleet store {exc}"
    if isinstance(exc, ImportError):
        return (f"fleet store {store}: reading it needs DuckDB ({exc}); install "
                "dpmlens[traces] into the server's environment")
    if isinstance(exc, UsageError):  # fleet.store.StoreError: not a store, newer format
        return f"fleet store: {exc}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"fleet store {store}: cannot be read ({type(exc).__name__}: {first[:300]})"

"""``quotebound mcp``: quotebound as an MCP server for assistants (docs/mcp.md)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import click

from ..errors import InputError
from ..providers import make_provider
from ..store import open_store
from ..store.pool import OneStore, Stores
from .options import EXIT_OK, provider_options, skip_unchosen, store_option

_IDLE_CONNECTIONS = 8  # store connections kept open between calls over HTTP (serve's default)


@click.command("mcp")
@click.option(
    "--http",
    "http",
    metavar="HOST:PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp, each request with an API key "
    "(Authorization: Bearer KEY); without it, stdio (one conversation).",
)
@click.option("--acl", "groups", multiple=True, metavar="GROUP", help="Over stdio, read as GROUP.")
@click.option(
    "--corpus", "corpora", multiple=True, metavar="NAME", help="Search only NAME by default."
)
@provider_options
@click.option("--no-ask", is_flag=True, help="Offer no ask tool (no answering model is loaded).")
@store_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="With --http: print where it listens as one JSON document (stdout is the protocol "
    "over stdio: nothing else is printed there).",
)
def mcp_cmd(
    http: str | None,
    groups: tuple[str, ...],
    corpora: tuple[str, ...],
    provider: str,
    model: str | None,
    model_path: Path | None,
    base_url: str | None,
    api_key: str | None,
    no_ask: bool,
    store_url: str | None,
    as_json: bool,
) -> int:
    """Serve quotebound to an assistant over the Model Context Protocol: the tools search,
    verify, open and ask, the traces as resources, and a prompt that walks the model through
    search, quote, verify and one repair."""
    try:
        from .. import mcp
    except ImportError as exc:  # pragma: no cover - the extra is installed by make
        raise InputError(
            f"quotebound mcp needs the mcp extra: pip install 'quotebound[mcp]' ({exc})"
        ) from exc
    address = _address(http) if http is not None else None
    asker = None if no_ask else _lazy_asker(provider, model, model_path, base_url, api_key)
    chosen = tuple(corpora) or None
    if address is None:
        with open_store(store_url) as store:
            mcp.run_stdio(mcp.conversation_for(OneStore(store), None, groups, chosen, asker))
        return EXIT_OK
    import uvicorn

    # over HTTP each call takes its own connection from a pool: many assistants' searches,
    # verifications and questions run side by side (serve's pool: ``store.pool.Stores``)
    stores = Stores(store_url, idle=_IDLE_CONNECTIONS)
    try:
        with stores.checkout():  # (the store opens, migrated, before anyone is told to call)
            pass
        app = mcp.http_app(lambda key: mcp.conversation_for(stores, key, (), chosen, asker), stores)
        host, port = address
        url = f"http://{host}:{port}/mcp"
        if as_json:
            click.echo(json.dumps({"listening": url, "transport": "streamable-http"}))
        else:
            click.echo(f"quotebound MCP server on {url} (Ctrl-C stops)", err=True)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        stores.close()
    return EXIT_OK


def _address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"--http wants HOST:PORT (127.0.0.1:8765), got {value!r}")
    return host.strip("[]"), int(port)


def _lazy_asker(
    provider: str,
    model: str | None,
    model_path: Path | None,
    base_url: str | None,
    api_key: str | None,
) -> Any:
    """``ask`` with ``quotebound ask``'s defaults beside the chosen provider, made on the
    first question (an assistant that only searches and verifies loads no model)."""
    from ..defaults import defaults
    from ..mcp.server import asker_of

    made: list[Any] = []
    lock = threading.Lock()

    def run(question: str, store: Any, options: Any) -> Any:
        with lock:
            if not made:
                chosen = make_provider(
                    provider, model, base_url=base_url, api_key=api_key, model_path=model_path
                )
                parts = defaults(chosen, may_skip=skip_unchosen)
                made.append(asker_of(parts.provider, parts.options()))
        return made[0](question, store, options)

    return run

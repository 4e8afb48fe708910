"""API keys and trace listing on both backends, and the `quotebound keys` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from quotebound.cli import cli
from quotebound.store import Store, TraceRecord, TraceSource, open_store
from quotebound.store.migrations import migrations


def test_a_key_authenticates_until_revoked_and_its_secret_is_never_stored(store: Store) -> None:
    key, secret = store.create_key(["legal", "hr", "legal"], name="ops")
    assert key.groups == ("hr", "legal") and key.name == "ops"
    assert secret.startswith(f"qb_{key.id}_")
    assert store.authenticate(secret) == key
    assert store.authenticate(secret + "x") is None
    assert store.authenticate(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None
    assert store.authenticate("") is None and store.authenticate("qb_' OR 1=1 --") is None
    with store._read() as cur:  # type: ignore[attr-defined]
        cur.execute("SELECT * FROM api_keys")
        rows = cur.fetchall()
    assert rows and all(secret not in str(v) and secret[-43:] not in str(v) for v in rows[0])
    other, other_secret = store.create_key()
    assert store.revoke_key(key.id) is True
    assert store.revoke_key(key.id) is False
    assert store.authenticate(secret) is None
    assert store.authenticate(other_secret) == other
    listed = {k.id: k for k in store.list_keys()}
    assert listed[key.id].revoked_at is not None and listed[other.id].revoked_at is None


def test_bad_groups_are_refused(store: Store) -> None:
    from quotebound.errors import InputError

    with pytest.raises(InputError):
        store.create_key([" padded"])


def test_list_traces_shows_only_the_owners_newest_first(store: Store) -> None:
    src = (TraceSource("S1", "text"),)
    ids = []
    for n, owner in enumerate(["a", "b", "a", None]):
        trace = TraceRecord(
            question=f"q{n}",
            sources=src,
            owner=owner,
            created_at=f"2026-11-29T10:00:0{n}.000+00:00",
        )
        ids.append(store.write_trace(trace))
    assert [t.question for t in store.list_traces("a")] == ["q2", "q0"]
    assert [t.id for t in store.list_traces("a", limit=1)] == [ids[2]]
    assert [t.question for t in store.list_traces(None)] == ["q3"]
    assert store.list_traces("nobody") == []


def test_the_keys_migration_is_listed_and_applied(store: Store) -> None:
    names = [m.name for m in migrations(store.dialect)]  # type: ignore[attr-defined]
    assert "0003_api_keys" in names
    assert store.applied_migrations() == names  # type: ignore[attr-defined]


def test_keys_commands(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    runner = CliRunner()
    made = runner.invoke(
        cli, ["keys", "create", "--acl", "legal", "--name", "ci", "--store", url, "--json"]
    )
    assert made.exit_code == 0, made.output
    key = json.loads(made.output)
    assert key["groups"] == ["legal"] and key["secret"].startswith("qb_")
    human = runner.invoke(cli, ["keys", "create", "--store", url])
    assert "shown only now" in human.output and "public documents only" in human.output
    listed = json.loads(runner.invoke(cli, ["keys", "list", "--store", url, "--json"]).output)
    assert [k["name"] for k in listed["keys"]] == ["ci", None]
    assert all("secret" not in k for k in listed["keys"])
    assert "ci" in runner.invoke(cli, ["keys", "list", "--store", url]).output
    revoked = runner.invoke(cli, ["keys", "revoke", key["id"], "--store", url, "--json"])
    assert json.loads(revoked.output) == {"id": key["id"], "revoked": True}
    with open_store(url) as store:
        assert store.authenticate(key["secret"]) is None


def test_revoking_an_unknown_key_is_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'k.db'}"
    out = subprocess.run(
        [sys.executable, "-m", "quotebound", "keys", "revoke", "nope", "--store", url, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert json.loads(out.stdout)["error"]["code"] == "not_found"
    assert "Traceback" not in out.stderr


# -- what ACL groups hide, and what they do not (docs/server.md) ------------------------------

_PUBLIC = [
    ("p1.txt", "Budget: the budget review covers the budget year, and travel."),
    ("p2.txt", "Travel rules: travel is booked at the desk, with a budget code."),
    *((f"f{n}.txt", f"Filler page {n} about parking, lockers and the canteen.") for n in range(12)),
]
_RESTRICTED = [(f"r{n}.txt", f"Restricted budget line {n} of the board.") for n in range(40)]


def _ingest(store: Store, docs: list[tuple[str, str]], acl: list[str]) -> None:
    from kits.corpuskit import make_doc

    for name, text in docs:
        doc, chunks = make_doc(name, text)
        store.ingest("c", doc, chunks, acl=acl)


def _order(store: Store) -> list[str]:
    return [h.key for h in store.search("budget travel", groups=())]


def test_restricted_text_never_returns_but_store_wide_statistics_move_the_order(
    store_url: str, tmp_path: Path
) -> None:
    with open_store(store_url) as store:
        _ingest(store, _PUBLIC, [])
        alone = _order(store)
        _ingest(store, _RESTRICTED, ["board"])
        mixed = _order(store)
        assert sorted(mixed) == sorted(alone) == ["c:p1.txt", "c:p2.txt"]  # never a restricted hit
        assert len(store.search("restricted board line", groups=())) == 0
        assert len(store.search("restricted board line", groups=("board",))) > 0
    # the documented limit, on both backends: bm25's word statistics count the restricted
    # chunks ("budget" is now common), so the public results swap places
    assert alone == ["c:p1.txt", "c:p2.txt"] and mixed == ["c:p2.txt", "c:p1.txt"]
    # isolation: the other tenant in a store of its own changes nothing
    with open_store(f"sqlite:///{tmp_path / 'a.db'}") as a:
        _ingest(a, _PUBLIC, [])
        with open_store(f"sqlite:///{tmp_path / 'b.db'}") as b:
            _ingest(b, _RESTRICTED, [])
        assert _order(a) == ["c:p1.txt", "c:p2.txt"]

"""Links a colleague can open: a cited source of one trace, without an API key, for a while.

``/shared/{trace}/{sid}?exp=UNIX&sig=HEX`` opens the page ``/v1/traces/{trace}/sources/{sid}/
document`` shows (the source as it was sent, its verified quotes marked; the whole document
only when it is public), signed with HMAC-SHA256 over the trace id, the source id and the
expiry. Nothing else is reachable with it: another source, another trace, a later expiry or an
altered signature is a 403 page. The key is ``QUOTEBOUND_LINK_SECRET`` when set (every worker
and host of a service must share it), else a random one kept in the data directory
(``link-secret``, mode 0600), shared by the workers of one machine; links live
``ServerConfig.link_days`` (``serve --link-days``, default 30).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import time
from pathlib import Path

log = logging.getLogger("quotebound.server")

SECRET_ENV = "QUOTEBOUND_LINK_SECRET"
SECRET_FILE = "link-secret"


def link_secret(home: Path) -> bytes:
    """The signing key: the environment's, else the data directory's (made once); where that
    cannot be written (a read-only home), one of this process's own, said in the log: its
    links then open only while it runs, and only on it."""
    given = os.environ.get(SECRET_ENV, "").strip()
    if given:
        return given.encode()
    try:
        return _kept_secret(home)
    except OSError as exc:
        log.warning(
            "no link key could be kept in %s (%s): set %s; links will open only on this "
            "worker while it runs",
            home,
            exc,
            SECRET_ENV,
        )
        return secrets.token_hex(32).encode()


def _kept_secret(home: Path) -> bytes:
    path = home / SECRET_FILE
    if not path.exists():  # made whole, then linked in: workers starting at once agree
        home.mkdir(parents=True, exist_ok=True)
        draft = home / f"{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, secrets.token_hex(32).encode())
        finally:
            os.close(fd)
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another worker's key stands
        finally:
            draft.unlink()
    return path.read_bytes().strip()


class LinkSigner:
    """Signs and checks links to one source of one trace."""

    def __init__(self, secret: bytes, days: float) -> None:
        self._secret = secret
        self.seconds = int(days * 86400)

    def _sig(self, trace: str, sid: str, exp: int) -> str:
        message = f"{trace}\n{sid}\n{exp}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def path(self, trace: str, sid: str, now: float | None = None) -> str:
        """The signed path (and query) of the link, expiring ``days`` from now."""
        exp = int(now if now is not None else time.time()) + self.seconds
        return f"/shared/{trace}/{sid}?exp={exp}&sig={self._sig(trace, sid, exp)}"

    def valid(self, trace: str, sid: str, exp: str, sig: str, now: float | None = None) -> bool:
        """Whether ``sig`` signs this trace, source and expiry, and the expiry is ahead."""
        if not exp.isdigit() or len(exp) > 12:
            return False
        if int(exp) < (now if now is not None else time.time()):
            return False
        return hmac.compare_digest(self._sig(trace, sid, int(exp)), sig)

"""The one error hierarchy of quotebound.

    QuoteboundError            base: every error we raise on purpose
    ├── InputError             bad input from a caller (files, JSON, arguments); CLI exit 2
    │   ├── SourceError        a Source or WorkingSet that breaks its invariants
    │   └── IngestError        a file that cannot be read or extracted (reported, skipped)
    │   └── WorkLimitError     more work than a service's budget allows (claims, citations...)
    ├── PolicyError            a verification policy that makes no sense
    ├── TimeLimitError         a request ran past a service's wall-time budget
    ├── NotFoundError          a trace, source or document that does not exist (or is not yours)
    └── StoreError             the store cannot be opened, migrated or written

Messages name the problem and, where there is one, the next step. The CLI maps these to
exit codes in one place (``cli/__init__.py``); nothing else decides exit codes. Each class also
says its HTTP status (``http_status``, a plain int: nothing here knows about HTTP); the service
turns an error into its response in one place (``server/errors.py``), which also decides what a
client may read (a StoreError's message, with its paths, stays in the server log).
"""

from __future__ import annotations


class QuoteboundError(Exception):
    """Base class: an error quotebound raised on purpose, with a message for a person."""

    code = "error"
    http_status = 500  # not a caller's fault (ProviderError, EntailmentError...)
    exit_code = 2


class InputError(QuoteboundError):
    """The input given to quotebound is missing, unreadable or malformed."""

    code = "bad_input"
    http_status = 400


class SourceError(InputError):
    """A Source or WorkingSet breaks its invariants (empty id, duplicate id, bad kind...)."""

    code = "bad_source"


class WorkLimitError(InputError):
    """The input asks for more work than the service's ``Budget`` allows."""

    code = "work_limit"
    http_status = 413


class TimeLimitError(QuoteboundError):
    """A request ran past the service's wall-time ``Budget``; it stopped between two steps."""

    code = "time_limit"
    http_status = 503


class PolicyError(QuoteboundError):
    """A verification policy that cannot be applied (e.g. min quote words above max)."""

    code = "bad_policy"
    http_status = 400


class IngestError(InputError):
    """A file that cannot be read or whose text cannot be extracted."""

    code = "unreadable_file"


class NotFoundError(QuoteboundError):
    """A trace, a cited source or a document that does not exist, or is not the caller's."""

    code = "not_found"
    http_status = 404


class StoreError(QuoteboundError):
    """The store cannot be opened, migrated or written; the message says which and why."""

    code = "store_error"
    http_status = 503


def unreadable(what: str, path: object, exc: OSError | UnicodeDecodeError) -> InputError:
    """The InputError for a ``what`` file (``SOURCES``, ``dataset``...) that could not be read:
    missing, a directory, not UTF-8, or another OS error."""
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{what} file not found: {path}")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{what} is a directory, not a file: {path}")
    if isinstance(exc, UnicodeDecodeError):
        return InputError(f"{what} file {path} is not UTF-8 text ({exc.reason})")
    return InputError(f"cannot read {what} file {path}: {exc.strerror}")

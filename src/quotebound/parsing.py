"""Raw model output -> claims, for every output format the verifier reads.

Every format maps to the same model: an answer is a list of claims, each with citations
``(ref, quote | None)``. Parsing never raises on model output: anything that cannot be read
becomes ``Parsed(error=...)``, which the verifier reports as ``unparseable``.

Formats (``FORMATS``):
- ``json``: ``{"answerable": bool, "claims": [{"text", "citations": [{"source", "quote"}]}],
  "missing": str}``, bare or inside a markdown fence.
- ``inline``: prose whose sentences carry markers: ``[2]``, ``[1][3]``, ``[1, 3]``, ``[S2]``,
  ``[doc_12]``. Each sentence is a claim.
- ``evidence``: ``<evidence>[S2] verbatim sentence</evidence>`` blocks, then the answer. A sentence
  with markers cites the evidence quoted from those sources; one without cites all evidence.
- ``cites``: an answer plus an id list, as a JSON field ``{"answer": ..., "cites": [...]}`` or a
  trailing ``cites: [...]`` line. The whole answer is one claim (seed 002: numbers are checked
  against the concatenated cited sources).

Refs are resolved against the WorkingSet in one place (``resolve_ref``): a ref that is exactly
an id is that source; otherwise a ref of digits ``n`` is the n-th source (1-based); otherwise
it is unknown. Nothing is fuzzy-matched.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard, get_args

from . import native
from .sources import WorkingSet
from .text.normalize import scrub
from .text.sentences import breaks

# The formats, written once: what a prompt may ask a model for (``contract``), what else an
# answer may come in (a bare list of ids), and each provider's own response (``native``).
# The CLI's choices, the HTTP schemas and the docs derive from these.
PromptFormat = Literal["json", "inline", "evidence"]
Format = Literal[PromptFormat, "cites", native.Vendor]
FormatChoice = Literal["auto", Format]  # what a caller may pass: "auto" detects it
PROMPT_FORMATS: tuple[PromptFormat, ...] = get_args(PromptFormat)
FORMATS: tuple[FormatChoice, ...] = get_args(FormatChoice)
_FORMATS = frozenset(FORMATS) - {"auto"}
DEFAULT_SENTINELS: tuple[str, ...] = (
    "Not covered by the provided documents.",
    "INSUFFICIENT_CONTEXT",
)


@dataclass(slots=True)
class ParsedCitation:
    """A citation as written: the ref, the source it resolves to (or None), and its quote."""

    ref: str
    source_id: str | None
    quote: str | None
    needs_quote: bool
    # what a provider's own citation said (vendor formats: ``native``), else None
    native: dict[str, Any] | None = None


@dataclass(slots=True)
class ParsedClaim:
    text: str
    citations: list[ParsedCitation] = field(default_factory=list)
    # inline format: a sentence with no marker at all (it may still need none)
    unmarked: bool = False
    # what the relevance rule reads the claim with, when its citations were given for more
    # than the claim (a link closing a paragraph cites the paragraph): None, the claim alone
    context: str | None = None
    # a list answer ("2006 [1], 1977 [2], 2004 [3]."): each item's text and the indexes of its
    # own citations in ``citations``; each item is checked against those alone
    items: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(slots=True)
class Parsed:
    format: Format
    claims: list[ParsedClaim] = field(default_factory=list)
    abstained: bool = False
    answerable: bool | None = None
    missing: str | None = None
    error: str | None = None


def resolve_ref(ws: WorkingSet, ref: str) -> str | None:
    """The id a ref names: exact id, else ``n`` -> n-th source, else None."""
    if ref in ws:
        return ref
    if ref.isascii() and ref.isdigit() and len(ref) <= 9:  # int() of any length could raise
        src = ws.nth(int(ref))
        return None if src is None else src.id
    return None


def _citation(ws: WorkingSet, ref: str, quote: str | None, needs_quote: bool) -> ParsedCitation:
    return ParsedCitation(ref, resolve_ref(ws, ref), quote, needs_quote)


# -- format detection -----------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_EVIDENCE_OPEN = re.compile(r"<evidence\b[^>]*>", re.IGNORECASE)
_CITES_LINE = re.compile(r"""(?im)^[ \t]*["']?cites["']?[ \t]*[:=][ \t]*\[(.*?)\][ \t]*,?[ \t]*$""")


_NOT_DECODED: Any = object()
_CONTRACT_KEYS = frozenset({"claims", "answerable", "cites"})


def _detect(raw: str) -> tuple[Format, Any]:
    """The format, and the JSON value when detection had to decode it (else _NOT_DECODED)."""
    text = raw.strip()
    if _EVIDENCE_OPEN.search(text):
        return "evidence", _NOT_DECODED
    streamed = text.startswith(("event:", "data:")) or (
        text.startswith("{") and "\n{" in text  # one JSON object per line
    )
    if streamed:  # a provider's stream: server-sent events, or JSON lines
        try:
            events = native.load(text)
        except native.NativeError:
            events = None
        vendor = native.detect(events) if isinstance(events, list) else None
        if vendor is not None:
            return vendor, events
    data = _load_json(text) if "{" in text else None
    contract = isinstance(data, dict) and bool(_CONTRACT_KEYS & data.keys())
    vendor = None if contract else native.detect(data)
    if vendor is not None and text.startswith(("{", "[")):
        return vendor, data
    starts_as_json = text.startswith(("{", "```", "[{"))
    # prose may quote a JSON object (a tool payload): only the contract's keys make it JSON
    if isinstance(data, dict) and (starts_as_json or _CONTRACT_KEYS & data.keys()):
        return ("cites" if "cites" in data and "claims" not in data else "json"), data
    if starts_as_json:
        return "json", _NOT_DECODED  # JSON that does not decode: parse_json says why
    if _CITES_LINE.search(text):
        return "cites", _NOT_DECODED
    return "inline", _NOT_DECODED


def _load_json(text: str) -> Any:
    """The first JSON value in text (fences stripped), or None if there is none."""
    try:
        return _decode_json(text)
    except ValueError:
        return None


def _decode_json(text: str) -> Any:
    text = text.strip()
    fenced = _FENCE.search(text) if "```" in text else None  # (a find is far cheaper)
    if fenced is not None:
        text = fenced.group(1).strip()
    hook = _scrub_strings if "\\u" in text and _ESCAPED_SURROGATE.search(text) else None
    try:
        return json.loads(text, object_hook=hook)
    except RecursionError:
        raise ValueError("output is not valid JSON: nested too deeply") from None
    except json.JSONDecodeError as exc:
        first = text.find("{")
        if first < 0:
            raise ValueError(f"output is not JSON ({exc.msg})") from None
        try:
            value, _ = json.JSONDecoder(object_hook=hook).raw_decode(text, first)
        except RecursionError:
            raise ValueError("output is not valid JSON: nested too deeply") from None
        except json.JSONDecodeError as inner:
            where = f"line {inner.lineno} column {inner.colno}"
            raise ValueError(f"output is not valid JSON: {inner.msg} at {where}") from None
        return value


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _scrub_strings(obj: dict[str, Any]) -> dict[str, Any]:
    """A "\\ud800" escape decodes to a lone surrogate: never let one into a claim or quote."""
    return {
        scrub(k): scrub(v)
        if isinstance(v, str)
        else [scrub(x) if isinstance(x, str) else x for x in v]
        if isinstance(v, list)
        else v
        for k, v in obj.items()
    }


# -- json -----------------------------------------------------------------------------------


class _Shape(ValueError):
    """The JSON parsed but does not have the contract's shape."""


def parse_json(ws: WorkingSet, raw: str, data: Any = _NOT_DECODED) -> Parsed:
    out = Parsed("json")
    try:
        if data is _NOT_DECODED:
            data = _decode_json(raw)
        if not isinstance(data, dict):
            raise _Shape(f"expected a JSON object, got {_type(data)}")
        answerable = data.get("answerable", True)
        if not isinstance(answerable, bool):
            raise _Shape(f'"answerable" must be true or false, got {_type(answerable)}')
        missing = data.get("missing")
        if missing is not None and not isinstance(missing, str):
            raise _Shape(f'"missing" must be a string or null, got {_type(missing)}')
        out.answerable, out.missing = answerable, missing or None
        if not answerable:
            out.abstained = True
            return out
        claims = data.get("claims")
        if not isinstance(claims, list):
            raise _Shape('"claims" must be a list of claim objects')
        out.claims = [_json_claim(ws, i, c) for i, c in enumerate(claims)]
    except ValueError as exc:
        out.error = str(exc)
    return out


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _json_claim(ws: WorkingSet, i: int, claim: Any) -> ParsedClaim:
    if type(claim) is not dict or type(text := claim.get("text")) is not str:  # (fast: usual)
        where = f"claims[{i}]"
        if not isinstance(claim, dict):
            raise _Shape(f"{where} must be an object, got {_type(claim)}")
        text = claim.get("text")
        if not isinstance(text, str):
            raise _Shape(f"{where}.text must be a string, got {_type(text)}")
    cits = _json_cites(ws, i, claim)
    # Markers inside a JSON claim's text ("... 16 weeks [S1].") are dropped, not trusted:
    # the citations list is what gets checked.
    body = _strip_markers(ws, text)[0] if ("[" in text or "(" in text) else text.strip()
    return ParsedClaim(body or text.strip(), cits)


def _json_cites(ws: WorkingSet, i: int, claim: dict[str, Any]) -> list[ParsedCitation]:
    """A claim's citations from its ``citations`` list, or else from its ``cites`` ids."""
    items = claim.get("citations")
    if isinstance(items, list):
        return [_json_citation(ws, i, j, c) for j, c in enumerate(items)]
    if "citations" in claim:
        raise _Shape(f"claims[{i}].citations must be a list")
    return [
        _citation(ws, ref, None, False) for ref in _ref_list(claim.get("cites"), f"claims[{i}]")
    ]


def _ref_text(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Shape(f"{where} must be a source id string, got {_type(value)}")
    return str(value).strip()


def _json_citation(ws: WorkingSet, i: int, j: int, item: Any) -> ParsedCitation:
    """Citation ``j`` of claim ``i``."""
    if type(item) is dict:
        source, quote = item.get("source"), item.get("quote")
        if type(source) is str and (quote is None or type(quote) is str):
            return _citation(ws, source.strip(), quote, True)  # the usual shape, checked fast
    where = f"claims[{i}].citations[{j}]"
    if isinstance(item, str | int) and not isinstance(item, bool):
        return _citation(ws, _ref_text(item, where), None, True)
    if not isinstance(item, dict):
        raise _Shape(f"{where} must be an object with source and quote, got {_type(item)}")
    ref = _ref_text(item.get("source"), f"{where}.source")
    quote = item.get("quote")
    if quote is not None and not isinstance(quote, str):
        raise _Shape(f"{where}.quote must be a string or null, got {_type(quote)}")
    return _citation(ws, ref, quote, True)


def _ref_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Shape(f"{where}.cites must be a list of source ids")
    return list(dict.fromkeys(_ref_text(v, f"{where}.cites[{k}]") for k, v in enumerate(value)))


# -- inline ---------------------------------------------------------------------------------

_BRACKET = re.compile(r"\[([^\[\]\n]{1,120})\](?!\()")
_PAREN = re.compile(r"\(([^()\n]{1,120})\)")
_TRAILING_GROUP = re.compile(r"\s*(?:\[([^\[\]\n]{1,120})\](?!\()|\(([^()\n]{1,120})\))")
_REF_TOKEN = re.compile(r"[A-Za-z0-9_:.#/-]+")
_LIST_PREFIX = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s")
# Compiled once here: a pattern written in a call is compiled again whenever re's cache has
# dropped it (a busy service's many answers), which costs more than the check it serves.
_REF_SEPARATOR = re.compile(r"[,;]|\s+and\s+")
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?])")
_MARKER_INSIDE = re.compile(r"\[([^\[\]\n]{1,120})\]")
_ANSWER_LABEL = re.compile(r"(?i)^answer\s*:\s*")


def _tokens(inner: str) -> list[str]:
    return [t.strip() for t in _REF_SEPARATOR.split(inner)]


def _marker_refs(ws: WorkingSet, inner: str) -> list[str] | None:
    """The refs in a bracket's content, or None if the bracket is not a citation marker."""
    tokens = _tokens(inner)
    if not tokens or any(not t for t in tokens):
        return None
    for token in tokens:
        if not _REF_TOKEN.fullmatch(token):
            return None
        if token not in ws and not any(ch.isdigit() or ch in "_:" for ch in token):
            return None  # [sic], [citation needed]: prose, not a marker
    return tokens


def _paren_refs(ws: WorkingSet, inner: str) -> list[str] | None:
    """Parentheses are a backup marker form, for exact ids only: "(2)" or "(COVID-19)" is prose."""
    tokens = _tokens(inner)
    return tokens if tokens and all(t in ws for t in tokens) else None


def _group_refs(ws: WorkingSet, m: re.Match[str]) -> list[str] | None:
    bracket, paren = m.group(1), m.group(2)
    return _marker_refs(ws, bracket) if bracket is not None else _paren_refs(ws, paren)


def _sentence_ends(ws: WorkingSet, line: str) -> list[int]:
    """Offsets just past each sentence end in a line (``text.sentences``' rule), the citation
    markers right after the stop included. Linear in the line."""
    ends: list[int] = []
    for gap_start, _, _ in breaks(line, 0, len(line)):
        end = gap_start
        if ends and end <= ends[-1]:
            continue  # inside the markers taken after the sentence before
        while (group := _TRAILING_GROUP.match(line, end)) and _group_refs(ws, group):
            end = group.end()
        ends.append(end)
    return ends


def _blocks(text: str) -> list[str]:
    """Paragraphs and list items; wrapped lines inside one are joined back together."""
    blocks: list[list[str]] = []
    fresh = True
    for raw_line in text.splitlines():
        if not raw_line.strip() or _HEADING.match(raw_line):
            fresh = True  # headings are not claims
            continue
        item = _LIST_PREFIX.match(raw_line) is not None
        line = _LIST_PREFIX.sub("", raw_line).strip()
        if fresh or item:
            blocks.append([line])
        else:
            blocks[-1].append(line)
        fresh = False
    return [" ".join(b) for b in blocks]


def _split_sentences(ws: WorkingSet, text: str) -> list[str]:
    out: list[str] = []
    for line in _blocks(text):
        start = 0
        for end in _sentence_ends(ws, line):
            if end > start:
                out.append(line[start:end].strip())
            start = end
        if line[start:].strip():
            out.append(line[start:].strip())
    return [s for s in out if s]


def _strip_markers(ws: WorkingSet, sentence: str) -> tuple[str, list[str]]:
    refs: list[str] = []

    def take(m: re.Match[str]) -> str:
        found = _marker_refs(ws, m.group(1))
        if found is None:
            return m.group()
        refs.extend(found)
        return ""

    def take_paren(m: re.Match[str]) -> str:
        found = _paren_refs(ws, m.group(1))
        if found is None:
            return m.group()
        refs.extend(found)
        return ""

    text = _PAREN.sub(take_paren, _BRACKET.sub(take, sentence))
    text = _SPACE_BEFORE_STOP.sub(r"\1", text)
    return " ".join(text.split()), list(dict.fromkeys(refs))


_Prose = tuple[str, list[str], list[tuple[str, list[str]]]]  # text, refs, list items


def _prose_claims(ws: WorkingSet, text: str) -> list[_Prose]:
    """Sentences of prose with the refs their markers name, and a list answer's items
    (``_list_items``); markers alone join the previous sentence."""
    claims: list[_Prose] = []
    for sentence in _split_sentences(ws, text):
        body, refs = _strip_markers(ws, sentence)
        if not any(c.isalnum() for c in body):
            if claims and refs:
                claims[-1][1].extend(r for r in refs if r not in claims[-1][1])
            continue
        if body.endswith(":") and not refs:
            continue  # a lead-in such as "Here is what the policy says:"
        claims.append((body, refs, _list_items(ws, sentence)))
    return claims


LIST_ITEM_WORDS = 6  # a list answer's items are short: "2006", "the Minié ball"
_ITEM_JOIN = re.compile(r"\s*(?:,?\s+(?:and|or)\b|[,;])\s*|\s*[.!?]?\s*$")


def _list_items(ws: WorkingSet, sentence: str) -> list[tuple[str, list[str]]]:
    """A list answer's items, each with its own markers' refs ("2006 [1], 1977 [2], 2004 [3].",
    ALCE's style), or none: at least two marker groups, each item before one at most
    ``LIST_ITEM_WORDS`` words, and after each group only a comma, a semicolon, "and", "or"
    or the sentence's end."""
    items: list[tuple[str, list[str]]] = []
    position = 0
    for m in _BRACKET.finditer(sentence):
        refs = _marker_refs(ws, m.group(1))
        if refs is None:
            continue
        text = sentence[position : m.start()].strip()
        if not any(ch.isalnum() for ch in text):  # "[1][2]", "[1], [2]": both cite the item
            if not items:
                return []
            items[-1][1].extend(r for r in refs if r not in items[-1][1])
        elif len(text.split()) > LIST_ITEM_WORDS:
            return []
        else:
            items.append((text, list(refs)))
        joined = _ITEM_JOIN.match(sentence, m.end())
        if joined is None and not sentence[m.end() :].lstrip().startswith("["):
            return []  # prose after the marker: no list
        position = joined.end() if joined is not None else m.end()
    if sentence[position:].strip() or len(items) < 2:
        return []
    return items


def parse_inline(ws: WorkingSet, raw: str) -> Parsed:
    out = Parsed("inline")
    for body, refs, items in _prose_claims(ws, raw):
        cits = [_citation(ws, ref, None, False) for ref in refs]
        listed = tuple((text, tuple(refs.index(r) for r in own)) for text, own in items)
        out.claims.append(ParsedClaim(body, cits, unmarked=not refs, items=listed))
    return out


# -- evidence -------------------------------------------------------------------------------

_EVIDENCE = re.compile(r"<evidence\b[^>]*>(.*?)</evidence\s*>", re.IGNORECASE | re.DOTALL)
_ANSWER_TAG = re.compile(r"</?answer\b[^>]*>", re.IGNORECASE)


_LEADING_MARKERS = re.compile(r"^\s*(?:[-*•]\s*)?((?:\[[^\[\]\n]{1,120}\]\s*)+)(.*)$")


def _evidence_items(ws: WorkingSet, block: str) -> list[tuple[str, str]]:
    """(ref, quote) per evidence line; ``[S1, S3] quote`` or ``[S1][S3] quote`` gives one
    item per ref; lines without a leading marker continue the previous quote."""
    items: list[tuple[list[str], str]] = []
    for line in block.splitlines():
        if not line.strip():
            continue
        m = _LEADING_MARKERS.match(line)
        refs = _leading_refs(ws, m.group(1)) if m is not None else None
        if m is not None and refs:
            items.append((refs, m.group(2).strip()))
        elif items:
            items[-1] = (items[-1][0], f"{items[-1][1]} {line.strip()}".strip())
        else:
            items.append(([""], line.strip()))
    return [(ref, quote) for refs, quote in items for ref in refs]


def _leading_refs(ws: WorkingSet, markers: str) -> list[str] | None:
    refs: list[str] = []
    for inner in _MARKER_INSIDE.findall(markers):
        found = _marker_refs(ws, inner)
        if found is None:
            return None
        refs.extend(found)
    return list(dict.fromkeys(refs))


def parse_evidence(ws: WorkingSet, raw: str, sentinels: tuple[str, ...]) -> Parsed:
    out = Parsed("evidence")
    opened = len(_EVIDENCE_OPEN.findall(raw))
    blocks = _EVIDENCE.findall(raw)
    if opened != len(blocks):
        out.error = "an <evidence> block is not closed (truncated output?)"
        return out
    evidence: list[ParsedCitation] = []
    for block in blocks:
        for ref, quote in _evidence_items(ws, block):
            evidence.append(_citation(ws, ref, quote, True))
    answer = _ANSWER_TAG.sub("", _EVIDENCE.sub("", raw)).strip()
    answer = _ANSWER_LABEL.sub("", answer)
    if answer in sentinels:
        out.abstained = True
        return out
    for body, refs, _ in _prose_claims(ws, answer):
        cited: list[ParsedCitation] = []
        for ref in refs:
            sid = resolve_ref(ws, ref)
            quoted = [e for e in evidence if sid is not None and e.source_id == sid]
            cited.extend(quoted or [_citation(ws, ref, None, True)])
        out.claims.append(ParsedClaim(body, cited if refs else list(evidence)))
    return out


# -- cites ----------------------------------------------------------------------------------


def parse_cites(
    ws: WorkingSet, raw: str, sentinels: tuple[str, ...], data: Any = _NOT_DECODED
) -> Parsed:
    out = Parsed("cites")
    text = raw.strip()
    try:
        if data is not _NOT_DECODED or text.startswith(("{", "```")):
            if data is _NOT_DECODED:
                data = _decode_json(text)
            if not isinstance(data, dict):
                raise _Shape(f"expected a JSON object, got {_type(data)}")
            if "claims" in data:
                return parse_json(ws, raw, data)
            if data.get("answerable") is False:
                out.abstained, out.answerable = True, False
                return out
            answer = next((data[k] for k in ("answer", "text", "response") if k in data), None)
            if not isinstance(answer, str):
                raise _Shape('expected an "answer" string beside "cites"')
            refs = _ref_list(data.get("cites"), "answer")
        else:
            m = _CITES_LINE.search(text)
            if m is None:
                raise _Shape("no cites: [...] list found")
            refs = [t.strip().strip("\"'") for t in m.group(1).split(",") if t.strip()]
            answer = (text[: m.start()] + text[m.end() :]).strip()
    except ValueError as exc:
        out.error = str(exc)
        return out
    body = " ".join(answer.split())
    if body in sentinels:
        out.abstained, out.answerable = True, False
        return out
    if body:
        cits = [_citation(ws, ref, None, False) for ref in dict.fromkeys(refs)]
        out.claims.append(ParsedClaim(body, cits, unmarked=not cits))
    return out


def parse(ws: WorkingSet, raw: str, fmt: str, sentinels: tuple[str, ...]) -> Parsed:
    """Parse raw model output in the given format (``auto`` detects it)."""
    chosen, data = _detect(raw) if fmt == "auto" else (_as_format(fmt), _NOT_DECODED)
    if _unfenced(raw) in sentinels:
        return Parsed(chosen, abstained=True, answerable=False)
    if chosen == "json":
        return parse_json(ws, raw, data)
    if chosen == "inline":
        return parse_inline(ws, raw)
    if chosen == "evidence":
        return parse_evidence(ws, raw, sentinels)
    if chosen in native.VENDORS:
        return parse_native(ws, raw, chosen, sentinels, data)
    return parse_cites(ws, raw, sentinels, data)


def parse_native(
    ws: WorkingSet, raw: str, vendor: Format, sentinels: tuple[str, ...], data: Any = _NOT_DECODED
) -> Parsed:
    """A provider's response with its own citations (``native``): each mapped citation is
    checked like any other; a quote where the provider gives one (Anthropic's ``cited_text``),
    else none (the whole cited source is the evidence, as for an inline marker)."""
    try:
        if data is _NOT_DECODED:
            data = native.load(raw)
        answer = native.read(ws, data, vendor)
    except native.NativeError as exc:
        return Parsed(vendor, error=f"{vendor} response: {exc}")
    if answer.text.strip().strip("\"'\u201c\u201d\u2018\u2019").strip() in sentinels:
        return Parsed(vendor, abstained=True, answerable=False)
    claims = [
        ParsedClaim(
            claim.text,
            [
                ParsedCitation(c.ref, c.source_id, c.quote, c.quote is not None, c.native)
                for c in claim.citations
            ],
            context=claim.context,
        )
        for claim in answer.claims
    ]
    return Parsed(vendor, claims=claims, answerable=True)


def _unfenced(raw: str) -> str:
    """The output trimmed, and without a markdown fence around all of it."""
    text = raw.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        text = text[3:-3].strip()
        first, _, rest = text.partition("\n")
        if rest and first.strip().isalpha() and " " not in first.strip():
            text = rest.strip()  # a language tag such as ```text
    return text


def _is_format(value: str) -> TypeGuard[Format]:
    return value in _FORMATS


def _as_format(value: str) -> Format:
    if not _is_format(value):
        raise ValueError(value)  # pragma: no cover - verify() validates the format first
    return value

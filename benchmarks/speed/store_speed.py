"""How fast the corpus and trace store is, SQLite and PostgreSQL side by side in one run.

What it measures, on a deterministic (seeded) corpus of 2,500 policy-like documents of 20
chunks each (50,000 chunks, each an exact slice of its document: a 400-900 character
paragraph of English policy prose from 32 sentence templates over 24 topics, ~800 content
words with a Zipf-like spread, made-up vendor, site and project names per document, numbers,
dates and ids such as ``chg-2025-0412``: ~15,000 distinct words), spread over three corpora,
with about 20% of the documents readable only by one ACL group:

1. ingest: every document through ``Store.ingest`` into a fresh store (one transaction per
   document): documents/s, chunks/s, MB/s of chunk text, total seconds, per-document p50/p95;
   then 200 unchanged documents again (must be a no-op: status ``unchanged``);
2. retrieval: 300 seeded queries of 2-6 words of one chunk (rarer words likelier), some
   wrapped in a question, some with ACL groups, some restricted to one corpus,
   ``store.search(q, corpora, groups, limit=10)`` after a warm-up: p50/p95/p99 latency and
   queries/s (and p50 CPU time of the calling thread: for SQLite all the work, so a busy
   machine shows in the wall time but much less here; for PostgreSQL the client's part,
   scoring the postings with numpy), and p50 by query shape and by how many chunks the
   SQLite full-text query matches. Every result is checked (asserted) before anything is
   reported: most queries find something, no hit comes from a document outside the caller's
   groups or corpora, hit texts and offsets are the chunk's, scores descend. SQLite's
   ranking is then held to exact bm25: the plain FTS5 query over the OR of every query word
   (each matching row scored, filtered by corpus and ACL, sorted, cut at the limit) runs
   untimed on the same file, and the report prints the top-10 overlap, the share in the same
   order and the largest score difference, so that any approximation in the store's search
   would show. PostgreSQL's is held to exact BM25 computed apart from its ranker, from the
   stored tsvectors (every matching chunk text scored with the real average length: every
   query at 50,000 chunks, the first 100 with ``--exact`` beyond), and the size of its
   packed postings (``term_postings``) is printed;
3. traces: 500 ``write_trace`` calls of a realistic ``TraceRecord`` (8 sources of ~700
   characters from the corpus, one attempt with a ~1.5 KB JSON answer and its real verdict
   from ``quotebound.verify``, an ~8 KB prompt): p50/p95/p99 ms per write, then
   ``get_trace`` of each (p50/p95 ms), every record checked equal to what was written, and
   ``get_traces`` of the 200 last written together (best of five, ms), as a trace list reads
   them.

Latencies are single calls timed with ``time.perf_counter`` from one caller, one at a time.
SQLite runs on a file in a temporary directory, as ``open_store("sqlite:///...")`` opens
it. PostgreSQL runs on a throwaway cluster (``kits/pgcluster.py``: fsync off, so it is
not slowed by the disk), in a fresh database; after the bulk load it runs ``VACUUM
ANALYZE``, as autovacuum would soon after (PostgreSQL 13 and later vacuum insert-only tables
too). SQLite gets no
``ANALYZE``: the store never runs one. When no PostgreSQL server can start here, its column
is left out and the reason is printed; the cluster is stopped and removed at the end, also on error.

The targets and PASS/FAIL are printed after the tables; the exit status is 0 either way
(this is a report, not a test). Progress goes to stderr. Run it from the repository root
(about 2-3 minutes on two cores; ``--backend sqlite`` runs SQLite alone)::

    .venv/bin/python -m benchmarks.speed.store_speed [--backend sqlite|both]
"""

from __future__ import annotations

import argparse
import collections
import gc
import itertools
import json
import math
import os
import platform
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quotebound import WorkingSet, verify
from quotebound.corpus import Chunk, LoadedDocument, Page
from quotebound.store import Hit, Store, TraceAttempt, TraceRecord, TraceSource, open_store
from quotebound.store.migrations import PG_BM25_B, PG_BM25_K1
from quotebound.store.ranking import fts_query
from quotebound.store.sql import visible, words

SEED = 20260214
DOCUMENTS = 2500
CHUNKS_PER_DOC = 20
CHUNK_CHARS = (400, 900)
CORPORA = ("handbook", "finance", "engineering")
GROUPS = ("hr", "finance", "legal", "executives", "security")
ACL_SHARE = 0.2
REINGEST = 200
QUERIES = 300
WARMUP_QUERIES = 40
LIMIT = 10
EXACT_SAMPLE = 100  # queries checked against exact BM25 past 50,000 chunks
MIN_NONEMPTY = 0.9
TRACES = 500
LIST_TRACES = 200  # the most GET /v1/traces returns
TRACE_SOURCES = 8
PROMPT_CHARS = 8000

# Targets from the issue.
MAX_SQLITE_SEARCH_P50_MS = 10.0
MAX_SQLITE_TRACE_WRITE_P50_MS = 2.0

# -- vocabulary ----------------------------------------------------------------------------

# Each topic's words are used as modifiers ("the parental allowance", "a phishing incident");
# a document has a main and a second topic, so words cluster by document as in real corpora.
_TOPICS: dict[str, tuple[str, ...]] = {
    "leave": ("parental", "maternity", "paternity", "sabbatical", "bereavement", "carer",
              "holiday", "vacation", "absence", "sickness", "accrual", "adoption", "unpaid",
              "furlough", "jury", "compassionate", "annual", "shared"),
    "travel": ("travel", "flight", "hotel", "mileage", "subsistence", "itinerary", "booking",
               "airfare", "rail", "taxi", "visa", "luggage", "lodging", "accommodation",
               "conference", "baggage", "passport", "layover"),
    "expenses": ("expense", "receipt", "petty", "cash", "card", "corporate", "voucher",
                 "ledger", "reimbursement", "per-diem", "entertainment", "client", "meal",
                 "gratuity", "tips", "mileage", "claims", "currency"),
    "security": ("password", "credential", "encryption", "firewall", "phishing", "malware",
                 "vulnerability", "patching", "badge", "authentication", "token", "endpoint",
                 "intrusion", "breach", "cipher", "ransomware", "multifactor", "privileged"),
    "privacy": ("privacy", "personal", "consent", "erasure", "anonymisation",
                "pseudonymisation", "controller", "processor", "disclosure", "cookie",
                "profiling", "minimisation", "lawful", "safeguard", "transfer", "biometric",
                "subject", "tracking"),
    "equipment": ("laptop", "monitor", "keyboard", "software", "licence", "hardware",
                  "helpdesk", "printer", "network", "wireless", "mailbox", "backup", "server",
                  "provisioning", "peripheral", "docking", "smartphone", "tablet"),
    "payroll": ("salary", "payslip", "bonus", "overtime", "commission", "pension", "deduction",
                "withholding", "payroll", "wage", "increment", "gross", "taxable", "stipend",
                "arrears", "garnishment", "timesheet", "shift"),
    "benefits": ("insurance", "dental", "vision", "medical", "wellness", "gym", "childcare",
                 "annuity", "disability", "premium", "dependant", "enrolment", "eligibility",
                 "subsidy", "healthcare", "counselling", "bicycle", "cafeteria"),
    "recruitment": ("recruitment", "candidate", "interview", "vacancy", "referral",
                    "onboarding", "probation", "assessment", "shortlist", "hiring",
                    "applicant", "requisition", "headcount", "screening", "relocation",
                    "internship", "graduate", "offer"),
    "conduct": ("harassment", "bullying", "discrimination", "grievance", "disciplinary",
                "misconduct", "whistleblowing", "retaliation", "integrity", "ethics",
                "conflict", "gift", "hospitality", "bribery", "fraud", "investigation",
                "dignity", "respect"),
    "safety": ("safety", "hazard", "injury", "ergonomic", "evacuation", "fire",
               "extinguisher", "ventilation", "asbestos", "lifting", "protective", "helmet",
               "goggles", "accident", "inspection", "warden", "drill", "chemical"),
    "facilities": ("office", "desk", "parking", "locker", "canteen", "kitchen", "meeting",
                   "reception", "visitor", "cleaning", "heating", "lighting", "maintenance",
                   "lease", "floor", "building", "keycard", "storage"),
    "remote": ("remote", "hybrid", "homeworking", "telework", "broadband", "coworking",
               "timezone", "commute", "flexible", "availability", "webcam", "headset",
               "connectivity", "ergonomics", "nomad", "abroad", "overseas", "roaming"),
    "training": ("training", "course", "certification", "mentoring", "coaching", "workshop",
                 "curriculum", "tuition", "seminar", "apprenticeship", "learning",
                 "competency", "module", "accreditation", "induction", "skills",
                 "qualification", "bootcamp"),
    "performance": ("performance", "appraisal", "objective", "rating", "calibration",
                    "feedback", "promotion", "goal", "improvement", "milestone", "scorecard",
                    "merit", "talent", "succession", "potential", "recognition", "award",
                    "ranking"),
    "compliance": ("compliance", "regulation", "sanctions", "export", "embargo", "control",
                   "attestation", "exemption", "derogation", "statutory", "filing", "oversight",
                   "regulator", "licensing", "antitrust", "competition", "money", "laundering"),
    "procurement": ("supplier", "vendor", "contract", "tender", "purchase", "order",
                    "quotation", "catalogue", "framework", "negotiation", "invoice", "delivery",
                    "warranty", "rebate", "sourcing", "diligence", "subcontractor", "bid"),
    "environment": ("sustainability", "emissions", "carbon", "recycling", "waste", "energy",
                    "offset", "renewable", "water", "packaging", "footprint", "biodiversity",
                    "pollution", "efficiency", "solar", "compost", "paperless", "electric"),
    "finance": ("forecast", "capital", "depreciation", "amortisation", "revenue", "margin",
                "liquidity", "treasury", "hedging", "reconciliation", "variance", "provision",
                "writeoff", "impairment", "dividend", "accounts", "payable", "receivable"),
    "legal": ("liability", "indemnity", "jurisdiction", "arbitration", "litigation", "counsel",
              "trademark", "patent", "copyright", "confidentiality", "nondisclosure",
              "termination", "clause", "amendment", "signatory", "notarised", "settlement",
              "injunction"),
    "communications": ("press", "media", "spokesperson", "announcement", "newsletter",
                       "intranet", "branding", "logo", "social", "posting", "briefing",
                       "campaign", "sponsorship", "advertising", "publication", "podcast",
                       "webinar", "speaking"),
    "records": ("archive", "folder", "version", "retention", "disposal", "shredding",
                "scanning", "digitisation", "index", "metadata", "classification", "label",
                "custody", "repository", "microfilm", "legal-hold", "destruction", "vault"),
    "customer": ("customer", "complaint", "refund", "escalation", "ticket", "satisfaction",
                 "chargeback", "return", "replacement", "loyalty", "discount", "survey",
                 "callback", "resolution", "churn", "subscription", "renewal", "onsite"),
    "data": ("dataset", "schema", "lineage", "steward", "quality", "pipeline", "warehouse",
             "dashboard", "analytics", "sampling", "masking", "tokenisation", "provenance",
             "glossary", "ownership", "catalogue", "model", "experiment"),
}  # fmt: skip

_NOUNS = (
    "request", "form", "approval", "deadline", "exception", "record", "process", "procedure",
    "guideline", "standard", "requirement", "obligation", "notice", "period", "threshold",
    "limit", "allowance", "amount", "schedule", "review", "report", "assessment", "register",
    "entitlement", "arrangement", "agreement", "document", "evidence", "justification",
    "decision", "appeal", "outcome", "template", "checklist", "workflow", "portal", "account",
    "balance", "cycle", "quarter", "window", "category", "tier", "grade", "band", "level",
    "responsibility", "owner", "delegate", "budget", "cost", "fee", "charge", "rate", "cap",
    "ceiling", "policy", "plan", "programme", "scheme", "benefit", "claim", "incident", "audit",
    "exemption", "waiver", "declaration", "certificate", "log", "inventory", "escalation",
)  # fmt: skip
_ADJECTIVES = (
    "annual", "monthly", "quarterly", "mandatory", "optional", "eligible", "ineligible",
    "temporary", "permanent", "urgent", "routine", "exceptional", "reasonable", "material",
    "significant", "minor", "major", "sensitive", "confidential", "restricted", "public",
    "internal", "external", "regional", "global", "local", "standard", "revised", "previous",
    "current", "pending", "approved", "rejected", "overdue", "incomplete", "duplicate",
    "additional", "statutory", "contractual", "discretionary", "prior", "written", "verbal",
)  # fmt: skip
_VERBS = (
    ("approve", "approves", "approved"),
    ("review", "reviews", "reviewed"),
    ("submit", "submits", "submitted"),
    ("record", "records", "recorded"),
    ("escalate", "escalates", "escalated"),
    ("reject", "rejects", "rejected"),
    ("update", "updates", "updated"),
    ("verify", "verifies", "verified"),
    ("process", "processes", "processed"),
    ("reimburse", "reimburses", "reimbursed"),
    ("document", "documents", "documented"),
    ("notify", "notifies", "notified"),
    ("archive", "archives", "archived"),
    ("assess", "assesses", "assessed"),
    ("authorise", "authorises", "authorised"),
    ("validate", "validates", "validated"),
    ("monitor", "monitors", "monitored"),
    ("audit", "audits", "audited"),
    ("publish", "publishes", "published"),
    ("renew", "renews", "renewed"),
    ("cancel", "cancels", "cancelled"),
    ("extend", "extends", "extended"),
    ("suspend", "suspends", "suspended"),
    ("allocate", "allocates", "allocated"),
    ("confirm", "confirms", "confirmed"),
    ("retain", "retains", "retained"),
    ("delete", "deletes", "deleted"),
    ("transfer", "transfers", "transferred"),
    ("register", "registers", "registered"),
    ("track", "tracks", "tracked"),
)
_ROLES = (
    "line manager",
    "department head",
    "HR business partner",
    "finance controller",
    "data protection officer",
    "chief information security officer",
    "compliance officer",
    "general counsel",
    "facilities coordinator",
    "payroll administrator",
    "country director",
    "works council",
    "budget holder",
    "cost centre owner",
)
_TEAMS = (
    "Payroll",
    "People Operations",
    "Facilities",
    "Security",
    "Finance",
    "Legal",
    "IT Service Desk",
    "Procurement",
    "Compliance",
    "Internal Audit",
    "Communications",
    "Data Governance",
    "Treasury",
    "Workplace Safety",
)
_REGIONS = (
    "Germany",
    "France",
    "Ireland",
    "Poland",
    "Spain",
    "the Netherlands",
    "Portugal",
    "Belgium",
    "Austria",
    "Sweden",
    "Denmark",
    "Italy",
    "Czechia",
    "Singapore",
    "Canada",
    "Brazil",
    "Japan",
    "Kenya",
)
_SYSTEMS = (
    "Workday", "ServiceNow", "Concur", "SAP Ariba", "Jira", "Confluence", "the expense portal",
    "the HR inbox", "Coupa", "Okta", "DocuSign", "Greenhouse",
)  # fmt: skip
_PROGRAMMES = ("Bridge", "Northstar", "Harbour", "Keystone", "Lighthouse", "Meridian",
               "Compass", "Evergreen", "Summit", "Tidewater")  # fmt: skip
_COMMITTEES = ("risk", "audit", "remuneration", "ethics", "health and safety", "investment",
               "nominations", "data ethics")  # fmt: skip
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_CURRENCIES = ("EUR", "GBP", "USD", "CHF", "PLN", "SEK")
_REF_PREFIXES = ("job", "ref", "inv", "pol", "chg", "req", "inc", "po")

# One sentence each; ``{…}`` slots are filled per sentence.
_TEMPLATES = (
    "The {team} team {verbs} the {topic} {noun} for all staff in {region} by {month} {year}.",
    "Employees must {verb} any {adj} {topic} {noun} within {n} business days of the {noun2}.",
    "Where a {topic} {noun} is {adj}, the {role} {verbs} it under reference {ref} and records "
    "the outcome in {system}.",
    "A {adj} {noun} of up to {currency} {amount} applies to {topic} {noun2}s, subject to "
    "approval by the {role}.",
    "Requests concerning {topic} and {topic2} are {verbed} by the {team} team, normally within "
    "{n} days.",
    "Contractors and interns are not covered by this {topic} {noun}; the terms of their own "
    "{noun2} apply instead.",
    "From {month} {year}, the {programme} programme {verbs} the {adj} {topic} {noun} for "
    "offices in {region}.",
    "Records of every {topic} {noun} are retained for {n} years and then {verbed} in line with "
    "the {noun2} schedule.",
    "If the {noun} is {adj}, staff should contact {system} and quote ticket {ref} before the "
    "{noun2} is {verbed}.",
    "The {role} may grant an exception to the {topic} rules when the {noun} is {adj} and the "
    "{noun2} is documented.",
    "Part-time staff receive {pct}% of the standard {topic} {noun}, calculated on {days} days "
    "per year.",
    "Any breach of the {topic} {noun} must be reported to the {team} team within {n} hours.",
    "{Adj} {topic} {noun}s are reviewed every {n} months by the {committee} committee.",
    "In {region}, local law on {topic} matters takes precedence where it is more generous "
    "than this {noun}.",
    "Costs above {currency} {amount} for {topic} {noun2}s require sign-off from the {role} "
    "and the {team} team.",
    "Staff who {verb} a {topic} {noun} without {adj} approval may lose the {noun2} for {n} months.",
    "The {noun} described in section {sec} applies to {topic} and to {topic2} alike.",
    "{Topic} {noun}s submitted after {day} {month} are handled under the {adj} {noun2} "
    "procedure (see {ref}).",
    "Per the policy dated {iso}, {topic} {noun}s above {n} per quarter need a {adj} justification.",
    "The {topic} {noun} was last {verbed} on {iso} and replaces version {sec} of the {noun2}.",
    "Managers should {verb} {topic} {noun}s promptly, because a {adj} {noun2} delays payroll "
    "for everyone in {region}.",
    "Questions about {topic} or {topic2} go to the {team} team through {system}; urgent cases "
    "are escalated to the {role}.",
    "No {topic} {noun} may exceed {n} days in a row unless the {committee} committee agrees "
    "in writing.",
    "Each {noun} must name its owner, the {topic} {noun2} it covers and the date by which it "
    "will be {verbed}.",
    "During the {programme} pilot, {pct}% of {topic} {noun}s in {region} are {verbed} "
    "automatically by {system}.",
    "Unused {topic} {noun} lapses on {day} {month} unless it was carried over with {adj} consent.",
    "The contract with {vendor} for {topic} {noun2}s runs until {month} {year} and is managed "
    "by the {team} team.",
    "Staff based at the {site} site follow the {topic} {noun} for {region} unless the {role} "
    "decides otherwise.",
    "Project {project} {verbs} the {adj} {topic} {noun} and reports to the {committee} "
    "committee every {n} weeks.",
    "Invoices from {vendor} above {currency} {amount} are checked against purchase order {ref} "
    "before payment.",
    "Visitors to the {site} office must sign in at reception while {topic} {noun2}s are in "
    "progress.",
    "Under project {project}, {vendor} supplies {topic} {noun2}s to the {site} office from "
    "{month} {year}.",
)

# Names of vendors, sites and projects: made up per document, so most occur in few chunks
# (as names do in real corpora) and give queries rare, specific words.
_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s",
           "st", "t", "th", "tr", "v", "w")  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "y")
_CODAS = ("", "n", "r", "l", "ck", "st", "nd", "rn", "m", "x", "th")
_ENDINGS = ("ton", "wick", "ley", "more", "field", "vane", "gate", "holm", "by", "well", "ford",
            "ia", "ex", "ora", "")  # fmt: skip
_VENDOR_KINDS = ("Logistics", "Systems", "Consulting", "Facilities", "Analytics", "Partners",
                 "Supplies", "Labs")  # fmt: skip


def _name(rng: random.Random) -> str:
    syllables = "".join(
        rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
        for _ in range(rng.randint(1, 2))
    )
    return (syllables + rng.choice(_ENDINGS)).capitalize()


def _names(rng: random.Random) -> dict[str, tuple[str, ...]]:
    return {
        "vendor": tuple(f"{_name(rng)} {rng.choice(_VENDOR_KINDS)}" for _ in range(2)),
        "site": tuple(_name(rng) for _ in range(2)),
        "project": tuple(_name(rng) for _ in range(2)),
    }


_HEADINGS = (
    "Scope",
    "Definitions",
    "Eligibility",
    "Procedure",
    "Approvals",
    "Exceptions",
    "Records",
    "Responsibilities",
    "Review",
)

_STOPWORDS = frozenset(
    "about above after apply applies because before being between concerning contact during "
    "each every from have into more must only other should than that their them then there "
    "these they this unless under where which while will with within without your".split()
)


class Zipf:
    """Weighted choice over a sequence, the first items most likely (weights 1/(i+1))."""

    def __init__(self, items: Sequence[Any], rng: random.Random, s: float = 0.5) -> None:
        self.items = list(items)
        rng.shuffle(self.items)
        weights = [1.0 / (i + 1) ** s for i in range(len(self.items))]
        self.cum = [sum(weights[: i + 1]) for i in range(len(weights))]

    def __call__(self, rng: random.Random) -> Any:
        return rng.choices(self.items, cum_weights=self.cum)[0]


@dataclass
class Vocabulary:
    topics: dict[str, Zipf]
    nouns: Zipf
    adjectives: Zipf
    verbs: Zipf
    roles: Zipf
    teams: Zipf
    systems: Zipf
    regions: Zipf

    @classmethod
    def build(cls, rng: random.Random) -> Vocabulary:
        return cls(
            topics={name: Zipf(ws, rng, 0.6) for name, ws in _TOPICS.items()},
            nouns=Zipf(_NOUNS, rng),
            adjectives=Zipf(_ADJECTIVES, rng),
            verbs=Zipf(_VERBS, rng),
            roles=Zipf(_ROLES, rng),
            teams=Zipf(_TEAMS, rng),
            systems=Zipf(_SYSTEMS, rng),
            regions=Zipf(_REGIONS, rng),
        )


def _sentence(
    rng: random.Random,
    vocab: Vocabulary,
    topics: tuple[str, str],
    names: dict[str, tuple[str, ...]],
) -> str:
    def topic() -> str:
        r = rng.random()
        name = topics[0] if r < 0.7 else topics[1] if r < 0.9 else rng.choice(list(_TOPICS))
        return str(vocab.topics[name](rng))

    year = rng.randint(2019, 2027)
    verb = vocab.verbs(rng)
    adj = vocab.adjectives(rng)
    first = topic()
    slots = {
        "topic": first,
        "Topic": first[0].upper() + first[1:],
        "topic2": topic(),
        "noun": vocab.nouns(rng),
        "noun2": vocab.nouns(rng),
        "adj": adj,
        "Adj": adj.capitalize(),
        "verb": verb[0],
        "verbs": verb[1],
        "verbed": verb[2],
        "role": vocab.roles(rng),
        "team": vocab.teams(rng),
        "system": vocab.systems(rng),
        "region": vocab.regions(rng),
        "programme": rng.choice(_PROGRAMMES),
        "committee": rng.choice(_COMMITTEES),
        "month": rng.choice(_MONTHS),
        "day": str(rng.randint(1, 28)),
        "year": str(year),
        "iso": f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "n": str(rng.choice((2, 3, 5, 7, 10, 14, 15, 20, 30, 45, 60, 90, rng.randint(2, 120)))),
        "days": str(rng.choice((200, 220, 225, 230, 260))),
        "pct": str(rng.choice((20, 25, 40, 50, 60, 75, 80, 90))),
        "amount": f"{rng.randint(1, 25):,}{rng.choice(('0', '00', '000', '500', '250'))}",
        "currency": rng.choice(_CURRENCIES),
        "ref": f"{rng.choice(_REF_PREFIXES)}-{year}-{rng.randint(1, 9999):04d}",
        "sec": f"{rng.randint(1, 12)}.{rng.randint(1, 9)}",
        **{kind: rng.choice(options) for kind, options in names.items()},
    }
    return rng.choice(_TEMPLATES).format(**slots)


def _paragraph(
    rng: random.Random,
    vocab: Vocabulary,
    topics: tuple[str, str],
    names: dict[str, tuple[str, ...]],
) -> str:
    low, high = CHUNK_CHARS
    target = rng.randint(low, high)
    text = _sentence(rng, vocab, topics, names)
    while len(text) < target:
        sentence = _sentence(rng, vocab, topics, names)
        if len(text) + 1 + len(sentence) > high:
            if len(text) >= low:
                break
            continue
        text += " " + sentence
    return text


@dataclass
class Doc:
    corpus: str
    doc: LoadedDocument
    chunks: list[Chunk]
    acl: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.corpus}:{self.doc.name}"


def make_corpus(seed: int = SEED) -> tuple[list[Doc], list[str]]:
    """The documents, and the content words they use (what queries are made of)."""
    rng = random.Random(seed)
    vocab = Vocabulary.build(rng)
    topic_names = list(_TOPICS)
    docs = []
    for n in range(DOCUMENTS):
        topics = (rng.choice(topic_names), rng.choice(topic_names))
        names = _names(rng)
        paragraphs = [_paragraph(rng, vocab, topics, names) for _ in range(CHUNKS_PER_DOC)]
        text = "\n\n".join(paragraphs)
        chunks, pages, at = [], [], 0
        for i, para in enumerate(paragraphs):
            page = i // 3 + 1
            if i % 3 == 0:
                pages.append(Page(page, at, 0))
            pages[-1] = Page(page, pages[-1].start, at + len(para))
            heading = _HEADINGS[min(i // 3, len(_HEADINGS) - 1)]
            chunks.append(Chunk(para, at, at + len(para), (page,), f"{i // 3 + 1}. {heading}"))
            at += len(para) + 2
        year = rng.randint(2019, 2026)
        doc = LoadedDocument(
            name=f"{topics[0]}/{topics[0]}-{topics[1]}-{n:05d}.pdf",
            text=text,
            media_type="application/pdf",
            title=f"{topics[0].capitalize()} and {topics[1]} policy {n}",
            pages=tuple(pages),
            updated=f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        )
        acl = (rng.choice(GROUPS),) if rng.random() < ACL_SHARE else ()
        docs.append(Doc(CORPORA[n % len(CORPORA)], doc, chunks, acl))
    for d in docs:
        for c in d.chunks:
            assert d.doc.text[c.start : c.end] == c.text
    return docs, sorted(_content_words(c.text for d in docs for c in d.chunks))


def _content_words(texts: Any) -> set[str]:
    found: set[str] = set()
    for text in texts:
        found.update(w.lower() for w in re.findall(r"[A-Za-z]{4,}", text))
    return found - _STOPWORDS


# -- queries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    text: str
    corpora: tuple[str, ...] | None
    groups: tuple[str, ...]
    keywords: int = 0  # how many words were picked
    question: bool = False  # wrapped in "What does the policy say about ...?"


def doc_freq(docs: Sequence[Doc]) -> dict[str, float]:
    """The share of chunks each word (lower-cased, split as the store splits a query) is in."""
    counts = collections.Counter(
        w for d in docs for c in d.chunks for w in set(re.findall(r"\w+", c.text.lower()))
    )
    total = sum(len(d.chunks) for d in docs)
    return {w: n / total for w, n in counts.items()}


def make_queries(docs: Sequence[Doc], df: dict[str, float], count: int, seed: int) -> list[Query]:
    """2-6 content words of one chunk, rarer words likelier (weight: log 1/df), as people
    search for what is specific; sometimes one word from elsewhere in the vocabulary, and
    sometimes wrapped in a question (whose words reach the full-text query too). Some callers
    are in ACL groups, some restricted to one corpus."""
    rng = random.Random(seed)
    vocabulary = sorted(_content_words(c.text for d in docs[:200] for c in d.chunks))
    out = []
    for _ in range(count):
        d = rng.choice(docs)
        pool = sorted(_content_words([rng.choice(d.chunks).text]))
        picked: list[str] = []
        for _ in range(min(len(pool), rng.randint(2, 6))):
            weights = [math.log(1 / df[w]) + 0.05 for w in pool]
            picked.append(pool.pop(rng.choices(range(len(pool)), weights)[0]))
        if rng.random() < 0.3:
            picked[-1] = rng.choice(vocabulary)
        text = " ".join(picked)
        question = rng.random() < 0.25
        if question:
            text = f"What does the policy say about {text}?"
        corpora = (rng.choice(CORPORA),) if rng.random() < 0.4 else None
        r = rng.random()
        groups = (
            (rng.choice(GROUPS),) if r < 0.25 else tuple(rng.sample(GROUPS, 2)) if r < 0.35 else ()
        )
        out.append(Query(text, corpora, groups, len(picked), question))
    return out


def check_hits(query: Query, hits: Sequence[Hit], docs: dict[str, Doc]) -> None:
    """The benchmark must not time a broken path: every hit is allowed and exact."""
    assert len(hits) <= LIMIT
    for hit in hits:
        doc = docs[hit.key]
        assert not doc.acl or set(doc.acl) & set(query.groups), (query, hit.key, doc.acl)
        assert query.corpora is None or doc.corpus in query.corpora, (query, hit.key)
        chunk = doc.chunks[hit.ordinal]
        assert (hit.text, hit.start, hit.end, hit.version) == (
            chunk.text,
            chunk.start,
            chunk.end,
            1,
        )
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


# -- traces --------------------------------------------------------------------------------

_PROMPT_HEAD = (
    "You answer questions about company policy using only the sources below. Every claim in "
    "your answer must cite at least one source by its id and quote, word for word, the "
    "passage of that source that supports it. Do not use outside knowledge. If the sources "
    "do not answer the question, say so and set answerable to false. Answer in JSON with the "
    'keys "answerable", "claims" (each with "text" and "citations", each citation with '
    '"source" and "quote") and "missing".\n\n'
)


def make_traces(docs: Sequence[Doc], count: int, seed: int) -> list[TraceRecord]:
    rng = random.Random(seed)
    pool = [(d, i) for d in docs for i, c in enumerate(d.chunks) if 600 <= len(c.text) <= 800]
    traces = []
    for n in range(count):
        picked = rng.sample(pool, TRACE_SOURCES)
        sources = tuple(
            TraceSource(
                f"S{i}",
                d.chunks[o].text,
                key=f"{d.key}#c{o}",
                title=d.doc.title,
                updated=d.doc.updated,
                page=d.chunks[o].pages[0],
                start=d.chunks[o].start,
                end=d.chunks[o].end,
                version=1,
            )
            for i, (d, o) in enumerate(picked, 1)
        )
        question = f"Request {n}: what applies to {' and '.join(rng.sample(_NOUNS, 3))}?"
        claims: list[dict[str, Any]] = []
        while len(json.dumps(claims)) < 1400:
            src = rng.choice(sources[:4])
            sentence = rng.choice(re.split(r"(?<=\.) ", src.text)).split(" ")
            size = rng.randint(8, min(20, len(sentence)))
            start = rng.randint(0, len(sentence) - size)
            quote = " ".join(sentence[start : start + size])
            claims.append(
                {
                    "text": f"The policy states that {quote.rstrip('.')}.",
                    "citations": [{"source": src.id, "quote": quote}],
                }
            )
        raw = json.dumps({"answerable": True, "claims": claims, "missing": ""})
        ws = WorkingSet(s.to_source() for s in sources)
        verdict = verify(ws, raw, "json")
        assert verdict.status == "grounded", verdict.failures
        body = "".join(
            f'<source id="{s.id}" title="{s.title}" page="{s.page}">\n{s.text}\n</source>\n'
            for s in sources
        )
        prompt = f"{_PROMPT_HEAD}{body}\nQuestion: {question}\n"
        prompt += "Remember: quote sources exactly. " * max(0, (PROMPT_CHARS - len(prompt)) // 33)
        traces.append(
            TraceRecord(
                question=question,
                sources=sources,
                attempts=(TraceAttempt(raw, verdict.to_dict()),),
                prompt=prompt,
                model="bench-model-2026-01",
                corpus=picked[0][0].corpus,
                status=verdict.status,
                owner=f"user{rng.randint(1, 40)}@example.com",
                timings={"retrieve_ms": 4.2, "model_ms": 1830.5, "verify_ms": 0.4},
                counts={"retrieved": 20, "packed": TRACE_SOURCES, "claims": len(claims)},
                retrieved=tuple(s.key or "" for s in sources)
                + tuple(f"{rng.choice(docs).key}#c{rng.randrange(20)}" for _ in range(12)),
            )
        )
    return traces


# -- measuring -----------------------------------------------------------------------------


def pct(values: Sequence[float], p: float) -> float:
    """The p-th percentile (nearest rank) of ``values``, in their unit."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


@dataclass
class Result:
    ingest_s: float = 0.0
    ingest_doc_ms: list[float] = field(default_factory=list)
    reingest_s: float = 0.0
    size_mb: float = 0.0
    search_ms: list[float] = field(default_factory=list)
    search_cpu_ms: list[float] = field(default_factory=list)
    nonempty: float = 0.0
    mean_hits: float = 0.0
    top: list[list[str]] = field(default_factory=list)
    scores: list[list[float]] = field(default_factory=list)
    postings_mb: float = 0.0  # (PostgreSQL: the packed postings' share of the store)
    write_ms: list[float] = field(default_factory=list)
    read_ms: list[float] = field(default_factory=list)
    list_ms: list[float] = field(default_factory=list)


def run_backend(
    url: str,
    docs: Sequence[Doc],
    queries: Sequence[Query],
    warmup: Sequence[Query],
    traces: Sequence[TraceRecord],
    size_mb: Callable[[], float],
    after_load: Callable[[], None] = lambda: None,
    label: str = "",
) -> Result:
    res = Result()
    by_key = {d.key: d for d in docs}
    with open_store(url) as store:
        _ingest(store, docs, res, label)
        after_load()
        res.size_mb = size_mb()
        _search(store, queries, warmup, by_key, res, label)
        _traces(store, traces, res, label)
    return res


def _note(label: str, what: str) -> None:
    print(f"  [{label}] {what}", file=sys.stderr, flush=True)


def _ingest(store: Store, docs: Sequence[Doc], res: Result, label: str) -> None:
    gc.collect()
    started = time.perf_counter()
    for n, d in enumerate(docs, 1):
        took, out = timed(lambda d=d: store.ingest(d.corpus, d.doc, d.chunks, acl=d.acl))  # type: ignore[misc]
        assert out.status == "added", out
        res.ingest_doc_ms.append(took * 1000)
        if n % 500 == 0:
            _note(label, f"ingested {n}/{len(docs)} documents")
    res.ingest_s = time.perf_counter() - started
    again = random.Random(SEED + 7).sample(list(docs), REINGEST)
    started = time.perf_counter()
    for d in again:
        assert store.ingest(d.corpus, d.doc, d.chunks, acl=d.acl).status == "unchanged"
    res.reingest_s = time.perf_counter() - started
    assert len(store.documents()) == len(docs)


def _search(
    store: Store,
    queries: Sequence[Query],
    warmup: Sequence[Query],
    by_key: dict[str, Doc],
    res: Result,
    label: str,
) -> None:
    for q in warmup:
        check_hits(q, store.search(q.text, corpora=q.corpora, groups=q.groups, limit=LIMIT), by_key)
    gc.collect()
    results = []
    for q in queries:
        cpu = time.thread_time()
        took, hits = timed(
            lambda q=q: store.search(q.text, corpora=q.corpora, groups=q.groups, limit=LIMIT)  # type: ignore[misc]
        )
        res.search_cpu_ms.append((time.thread_time() - cpu) * 1000)
        res.search_ms.append(took * 1000)
        results.append(hits)
    for q, hits in zip(queries, results, strict=True):
        check_hits(q, hits, by_key)
    res.nonempty = sum(bool(h) for h in results) / len(results)
    assert res.nonempty >= MIN_NONEMPTY, f"only {res.nonempty:.0%} of the queries found anything"
    res.mean_hits = statistics.fmean(len(h) for h in results)
    res.top = [[f"{h.key}#{h.ordinal}" for h in hits] for hits in results]
    res.scores = [[h.score for h in hits] for hits in results]
    _note(label, f"searched {len(queries)} queries")


def _traces(store: Store, traces: Sequence[TraceRecord], res: Result, label: str) -> None:
    gc.collect()
    for t in traces:
        took, tid = timed(lambda t=t: store.write_trace(t))  # type: ignore[misc]
        assert tid == t.id
        res.write_ms.append(took * 1000)
    order = list(traces)
    random.Random(SEED + 9).shuffle(order)
    gc.collect()
    for t in order:
        took, back = timed(lambda t=t: store.get_trace(t.id))  # type: ignore[misc]
        res.read_ms.append(took * 1000)
        assert back == t, f"trace {t.id} did not round-trip"
    # a trace list (GET /v1/traces, eval --traces): the LIST_TRACES newest, read together
    newest = [t.id for t in traces[-LIST_TRACES:]]
    expected = {t.id: t for t in traces}
    for _ in range(5):
        gc.collect()
        took, back = timed(lambda: store.get_traces(newest))
        res.list_ms.append(took * 1000)
        assert back == [expected[i] for i in newest], "get_traces did not round-trip"
    _note(label, f"wrote and read {len(traces)} traces")


# -- PostgreSQL ----------------------------------------------------------------------------


def start_postgres() -> Any:
    """A started throwaway cluster (``kits.pgcluster``), or the reason there is none."""
    from kits.pgcluster import start_cluster

    return start_cluster()


def _pg(url: str, sql: str) -> Any:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchone() if cur.description else None


# -- report --------------------------------------------------------------------------------


def _row(label: str, values: Sequence[str]) -> str:
    return f"{label:<40}" + "".join(f"{v:>14}" for v in values)


def _table(title: str, names: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]]) -> None:
    header = _row(title, names)
    print(header)
    print("-" * len(header))
    for label, values in rows:
        print(_row(label, values))
    print()


def main(argv: Sequence[str] | None = None) -> int:
    global DOCUMENTS
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument(
        "--documents", type=int, default=DOCUMENTS, help="of 20 chunks each (default 2,500)"
    )
    parser.add_argument(
        "--exact",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="rank the queries again with exact BM25, untimed (default: at 50,000 chunks or "
        f"fewer, every query; --exact at more: the first {EXACT_SAMPLE})",
    )
    args = parser.parse_args(argv)
    backend = args.backend
    DOCUMENTS = args.documents
    started = time.perf_counter()
    gen_s, (docs, vocabulary) = timed(make_corpus)
    df = doc_freq(docs)
    queries = make_queries(docs, df, QUERIES, SEED + 1)
    warmup = make_queries(docs, df, WARMUP_QUERIES, SEED + 2)
    traces = make_traces(docs, TRACES, SEED + 3)
    gc.collect()
    gc.freeze()  # the corpus stays alive all run: keep it out of the collector's way
    n_chunks = sum(len(d.chunks) for d in docs)
    chunk_mb = sum(len(c.text.encode()) for d in docs for c in d.chunks) / 1e6
    unique = len({c.hash for d in docs for c in d.chunks})
    trace_kb = statistics.fmean(
        (len(t.prompt or "") + sum(len(s.text) for s in t.sources) + len(t.attempts[0].output))
        / 1000
        for t in traces
    )

    results: dict[str, Result] = {}
    pg_server = ""
    matches: list[int] | None = None
    exact = pg_exact = None
    with tempfile.TemporaryDirectory(prefix="qb-bench-") as tmp:
        if backend != "postgresql":
            path = Path(tmp) / "store.db"
            _note("sqlite", f"corpus generated in {gen_s:.1f} s; ingesting")
            results["sqlite"] = run_backend(
                f"sqlite:///{path}",
                docs,
                queries,
                warmup,
                traces,
                size_mb=lambda: sum(p.stat().st_size for p in Path(tmp).iterdir()) / 1e6,
                label="sqlite",
            )
            matches = fts_matches(path, queries)
            exact = exact_bm25(path, queries)
    cluster = start_postgres() if backend != "sqlite" else "not asked for (--backend sqlite)"
    if isinstance(cluster, str):
        pg_skipped = cluster
    else:
        pg_skipped = ""
        try:
            _pg(cluster.admin_url, "CREATE DATABASE qb_bench")
            url = cluster.url("qb_bench")
            pg_server = str(_pg(url, "SHOW server_version")[0])
            results["postgresql"] = run_backend(
                url,
                docs,
                queries,
                warmup,
                traces,
                size_mb=lambda: _pg(url, "SELECT pg_database_size(current_database())")[0] / 1e6,
                after_load=lambda: _pg(url, "VACUUM ANALYZE"),
                label="postgresql",
            )
            results["postgresql"].postings_mb = (
                _pg(url, "SELECT pg_total_relation_size('term_postings')")[0] / 1e6
            )
            if args.exact if args.exact is not None else DOCUMENTS <= 2500:
                checked = queries if DOCUMENTS <= 2500 else queries[:EXACT_SAMPLE]
                _note(
                    "postgresql",
                    f"ranking {len(checked)} queries again with exact BM25 (untimed)",
                )
                pg_exact = exact_pg_bm25(url, checked)
        finally:
            cluster.stop()

    names = list(results)
    cols = [results[n] for n in names]
    print("quotebound store speed")
    print(
        f"corpus: {len(docs):,} documents, {n_chunks:,} chunks ({unique:,} distinct texts), "
        f"{chunk_mb:.1f} MB of chunk text, {len(vocabulary):,} distinct content words; "
        f"{len(CORPORA)} corpora, {sum(bool(d.acl) for d in docs):,} documents behind an ACL "
        f"group (generated in {gen_s:.1f} s, seed {SEED})"
    )
    print(
        f"python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, PostgreSQL "
        f"{pg_server or '-'} (throwaway cluster, fsync off), on {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )
    if pg_skipped:
        print(f"postgresql: skipped ({pg_skipped})")
    print()

    def each(fn: Callable[[Result], str]) -> list[str]:
        return [fn(r) for r in cols]

    _table(
        f"ingest ({len(docs):,} docs, 1 tx each)",
        names,
        [
            ("documents/s", each(lambda r: f"{len(docs) / r.ingest_s:,.0f}")),
            ("chunks/s", each(lambda r: f"{n_chunks / r.ingest_s:,.0f}")),
            ("MB/s of chunk text", each(lambda r: f"{chunk_mb / r.ingest_s:.2f}")),
            ("total s", each(lambda r: f"{r.ingest_s:.1f}")),
            ("ms per document, p50", each(lambda r: f"{pct(r.ingest_doc_ms, 50):.1f}")),
            ("ms per document, p95", each(lambda r: f"{pct(r.ingest_doc_ms, 95):.1f}")),
            (f"re-ingest {REINGEST} unchanged, ms", each(lambda r: f"{r.reingest_s * 1e3:.0f}")),
            ("  ms per unchanged document", each(lambda r: f"{r.reingest_s * 1e3 / REINGEST:.2f}")),
            ("store size after load, MB", each(lambda r: f"{r.size_mb:.0f}")),
        ],
    )
    _table(
        f"search ({QUERIES} queries, limit {LIMIT})",
        names,
        [
            ("p50 ms", each(lambda r: f"{pct(r.search_ms, 50):.2f}")),
            ("  p50 CPU ms, calling thread", each(lambda r: f"{pct(r.search_cpu_ms, 50):.2f}")),
            ("p95 ms", each(lambda r: f"{pct(r.search_ms, 95):.2f}")),
            ("p99 ms", each(lambda r: f"{pct(r.search_ms, 99):.2f}")),
            ("max ms", each(lambda r: f"{max(r.search_ms):.2f}")),
            ("queries/s, one caller", each(lambda r: f"{1e3 / statistics.fmean(r.search_ms):.1f}")),
            ("queries with hits", each(lambda r: f"{r.nonempty:.0%}")),
            ("hits per query, mean", each(lambda r: f"{r.mean_hits:.1f}")),
        ],
    )
    _table(
        "search p50 ms by query shape", names, _search_by_shape(queries, cols, matches, n_chunks)
    )
    if matches:
        print(
            f"(SQLite FTS5 rows matched per query, the OR of its words, before joins and filters: "
            f"p50 {pct(matches, 50):,} = {pct(matches, 50) / n_chunks:.0%} of chunks, "
            f"p95 {pct(matches, 95):,}, min {min(matches):,}, max {max(matches):,}; "
            "a plain bm25 query scores every one; the SQLite store scores those that can reach "
            "the top 10)"
        )
        print()
    if exact is not None:
        lite = results["sqlite"]
        pairs = list(zip(lite.top, exact, strict=True))
        overlap10 = statistics.fmean(len(set(a) & set(b)) / max(1, len(b)) for a, (b, _) in pairs)
        in_order = statistics.fmean(a == b for a, (b, _) in pairs)
        worst = max(
            (
                abs(x - y)
                for got, (_, want) in zip(lite.scores, exact, strict=True)
                for x, y in zip(got, want, strict=False)
            ),
            default=0.0,
        )
        print(
            f"(SQLite ranking vs exact bm25, the plain FTS5 query over every query word with "
            f"every matching row scored: top-{LIMIT} overlap {overlap10:.4f}, same hits in the "
            f"same order {in_order:.0%}, largest score difference {worst:.2g})"
        )
        print()
    if pg_exact is not None:
        pgr = results["postgresql"]
        print(
            f"(PostgreSQL ranking vs exact BM25 over the same English stems, computed apart "
            f"from the store's tsvectors, every matching chunk scored with the corpus's real "
            f"average length: {_agreement(pgr.top[: len(pg_exact)], pg_exact)})"
        )
        print()
    if "postgresql" in results:
        print(
            f"(PostgreSQL packed postings, term_postings: "
            f"{results['postgresql'].postings_mb:.1f} MB of the store)"
        )
        print()
    if len(cols) == 2:
        overlap = statistics.fmean(
            len(set(a) & set(b)) / max(1, len(set(a) | set(b)))
            for a, b in zip(cols[0].top, cols[1].top, strict=True)
        )
        same_top = statistics.fmean(
            bool(a and b and a[0] == b[0]) for a, b in zip(cols[0].top, cols[1].top, strict=True)
        )
        print(
            f"(the backends tokenize apart: FTS5 porter/unicode61 vs PostgreSQL's english "
            f"configuration, which drops stop words; top-10 Jaccard overlap {overlap:.2f}, "
            f"same first hit {same_top:.0%})"
        )
        print()
    _table(
        f"traces ({TRACES}, ~{trace_kb:.1f} KB text each)",
        names,
        [
            ("write_trace p50 ms", each(lambda r: f"{pct(r.write_ms, 50):.2f}")),
            ("write_trace p95 ms", each(lambda r: f"{pct(r.write_ms, 95):.2f}")),
            ("write_trace p99 ms", each(lambda r: f"{pct(r.write_ms, 99):.2f}")),
            ("traces written/s", each(lambda r: f"{1e3 / statistics.fmean(r.write_ms):,.0f}")),
            ("get_trace p50 ms", each(lambda r: f"{pct(r.read_ms, 50):.2f}")),
            ("get_trace p95 ms", each(lambda r: f"{pct(r.read_ms, 95):.2f}")),
            (f"get_traces of {LIST_TRACES} ms", each(lambda r: f"{min(r.list_ms):.1f}")),
        ],
    )

    targets: list[tuple[str, str, str, bool]] = []
    if "sqlite" in results and DOCUMENTS == 2500:
        lite = results["sqlite"]
        search_p50, write_p50 = pct(lite.search_ms, 50), pct(lite.write_ms, 50)
        targets += [
            (
                "SQLite search p50",
                f"<= {MAX_SQLITE_SEARCH_P50_MS:g} ms",
                f"{search_p50:.2f} ms",
                search_p50 <= MAX_SQLITE_SEARCH_P50_MS,
            ),
            (
                "SQLite write_trace p50",
                f"<= {MAX_SQLITE_TRACE_WRITE_P50_MS:g} ms",
                f"{write_p50:.2f} ms",
                write_p50 <= MAX_SQLITE_TRACE_WRITE_P50_MS,
            ),
        ]
    if "postgresql" in results:
        pgr = results["postgresql"]
        p50, p95 = pct(pgr.search_ms, 50), pct(pgr.search_ms, 95)
        if DOCUMENTS == 2500:
            targets += [
                ("PostgreSQL search p50, 50,000 chunks", "<= 20 ms", f"{p50:.2f} ms", p50 <= 20),
                ("PostgreSQL search p95, 50,000 chunks", "<= 60 ms", f"{p95:.2f} ms", p95 <= 60),
            ]
        elif DOCUMENTS >= 25000:
            targets += [
                (
                    f"PostgreSQL search p50, {DOCUMENTS * CHUNKS_PER_DOC:,} chunks",
                    "<= 40 ms",
                    f"{p50:.2f} ms",
                    p50 <= 40,
                ),
            ]
    header = f"{'target':<40}{'wanted':>12}{'measured':>14}  result"
    print(header)
    print("-" * len(header))
    for name, wanted, got, ok in targets:
        print(f"{name:<40}{wanted:>12}{got:>14}  {'PASS' if ok else 'FAIL'}")
    print()
    passed = sum(ok for *_, ok in targets)
    elapsed = time.perf_counter() - started
    print(f"{passed}/{len(targets)} targets passed; total run time {elapsed:.1f} s")
    return 0


def _agreement(got: Sequence[list[str]], want: Sequence[list[str]]) -> str:
    """Top-k overlap and the share of identical lists, of two rankings of the same queries."""
    pairs = list(zip(got, want, strict=True))
    # (two empty lists agree: a query whose filter leaves nothing visible)
    overlap = statistics.fmean(len(set(a) & set(b)) / len(b) if b else a == b for a, b in pairs)
    in_order = statistics.fmean(a == b for a, b in pairs)
    return (
        f"top-{LIMIT} overlap {overlap:.4f}, same hits in the same order {in_order:.0%}, "
        f"n={len(pairs)}"
    )


def exact_pg_bm25(url: str, queries: Sequence[Query]) -> list[list[str]]:
    """What exact BM25 ranks first for each query on PostgreSQL, computed apart from the
    store's ranker: each chunk text's lexemes, term frequencies and length unpacked from its
    stored ``tsvector`` into a table of this session's (``exact_terms``, untimed), then every
    chunk text with one of the query's lexemes scored with the corpus's real average length
    and FTS5's idf, filtered by corpus and ACL, sorted, cut at the limit."""
    import math

    import psycopg

    sql = (
        "WITH q(term, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])), "
        f"s AS (SELECT t.id, sum(q.idf * t.tf * {PG_BM25_K1 + 1} / (t.tf + {PG_BM25_K1} * "
        f"  ({1 - PG_BM25_B} + {PG_BM25_B} * t.len / %s))) AS score "
        "  FROM exact_terms t JOIN q ON q.term = t.lexeme GROUP BY t.id) "
        "SELECT d.key || '#' || o.ordinal FROM s JOIN occurrences o ON o.chunk_id = s.id "
        "JOIN documents d ON d.id = o.document_id WHERE {where} "
        "ORDER BY s.score DESC, d.key, o.ordinal LIMIT %s"
    )
    out: list[list[str]] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TEMP TABLE exact_terms AS SELECT c.id, u.lexeme, "
            "coalesce(cardinality(u.positions), 1) AS tf, l.len FROM chunk_texts c "
            "CROSS JOIN LATERAL (SELECT sum(coalesce(cardinality(positions), 1)) AS len "
            "FROM unnest(c.tsv)) l CROSS JOIN LATERAL unnest(c.tsv) u"
        )
        conn.execute("CREATE INDEX ON exact_terms (lexeme)")
        conn.execute("ANALYZE exact_terms")
        # (every chunk text counts, one with no lexeme too: it has none in exact_terms)
        total, length = conn.execute(
            "SELECT (SELECT count(*) FROM chunk_texts), (SELECT coalesce(sum(len), 0) FROM "
            "(SELECT DISTINCT ON (id) len FROM exact_terms ORDER BY id) x)"
        ).fetchone()  # type: ignore[misc]
        total, avg = int(total), float(length) / max(int(total), 1)
        for q in queries:
            lexemes = conn.execute(
                "SELECT array(SELECT DISTINCT unnest(tsvector_to_array("
                "to_tsvector('english', %s))))",
                (" ".join(words(q.text)),),
            ).fetchone()[0]  # type: ignore[index]
            df: dict[str, int] = dict(
                conn.execute(
                    "SELECT lexeme, count(*) FROM exact_terms WHERE lexeme = ANY(%s) "
                    "GROUP BY lexeme",
                    (lexemes,),
                ).fetchall()
            )
            idf = {t: max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6) for t, n in df.items()}
            if not idf:
                out.append([])
                continue
            where, params = visible(q.corpora, q.groups)
            rows = conn.execute(
                sql.replace("{where}", where.replace("?", "%s")),
                (list(idf), list(idf.values()), avg, *params, LIMIT),
            ).fetchall()
            out.append([r[0] for r in rows])
    return out


def fts_matches(path: Path, queries: Sequence[Query]) -> list[int] | None:
    """How many chunks the SQLite full-text query of each query matches (before the joins,
    the corpus and ACL filter and the sort); None if the schema has moved on."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            sql = "SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?"
            return [int(conn.execute(sql, (fts_query(q.text),)).fetchone()[0]) for q in queries]
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def exact_bm25(path: Path, queries: Sequence[Query]) -> list[tuple[list[str], list[float]]] | None:
    """What exact bm25 ranks first for each query: the plain FTS5 query over the OR of every
    query word, each matching row scored, filtered by corpus and ACL as the store filters,
    sorted (score, key, ordinal) and cut at the limit; None if the schema has moved on."""
    sql = (
        "SELECT d.key || '#' || o.ordinal, -bm25(chunk_fts) AS score FROM chunk_fts "
        "JOIN occurrences o ON o.chunk_id = chunk_fts.rowid "
        "JOIN documents d ON d.id = o.document_id WHERE chunk_fts MATCH ? AND {where} "
        "ORDER BY bm25(chunk_fts), d.key, o.ordinal LIMIT ?"
    )
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            out = []
            for q in queries:
                match = fts_query(q.text)
                where, params = visible(q.corpora, q.groups)
                rows = conn.execute(sql.format(where=where), (match, *params, LIMIT)).fetchall()
                out.append(([r[0] for r in rows], [float(r[1]) for r in rows]))
            return out
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def _search_by_shape(
    queries: Sequence[Query], cols: Sequence[Result], matches: list[int] | None, n_chunks: int
) -> list[tuple[str, list[str]]]:
    """Median latency per kind of query."""
    share = [m / n_chunks for m in matches] if matches else []
    shapes: dict[str, Callable[[int], bool]] = {
        "2-3 keywords": lambda i: queries[i].keywords <= 3,
        "4-6 keywords": lambda i: queries[i].keywords >= 4,
        "question form (What does the ...?)": lambda i: queries[i].question,
        "one corpus": lambda i: queries[i].corpora is not None,
        "all corpora": lambda i: queries[i].corpora is None,
        "with ACL groups": lambda i: bool(queries[i].groups),
        "public only": lambda i: not queries[i].groups,
    }
    if share:
        shapes |= {
            "FTS5 matches < 5% of chunks": lambda i: share[i] < 0.05,
            "FTS5 matches 5-25% of chunks": lambda i: 0.05 <= share[i] < 0.25,
            "FTS5 matches 25-50% of chunks": lambda i: 0.25 <= share[i] < 0.5,
            "FTS5 matches >= 50% of chunks": lambda i: share[i] >= 0.5,
        }
    rows = []
    for label, pick in shapes.items():
        idx = [i for i in range(len(queries)) if pick(i)]
        if idx:
            rows.append(
                (
                    f"{label} (n={len(idx)})",
                    [f"{statistics.median(r.search_ms[i] for i in idx):.2f}" for r in cols],
                )
            )
    return rows


if __name__ == "__main__":
    sys.exit(main())

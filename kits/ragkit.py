"""What the framework tests share: three documents, the question, and the replies a model
gives (as JSON under our contract, or with a framework's [n] markers)."""

from __future__ import annotations

import json
from typing import Any

LEAVE = "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
GERMANY = "In Germany the company tops up parental leave pay to full salary for the first 14 weeks."
HOTEL = "Hotel stays are capped at 180 EUR per night in tier 1 cities."
DOCS: list[tuple[str, dict[str, Any]]] = [
    (LEAVE, {"source": "https://intranet.example/leave.pdf", "title": "Leave policy", "page": 0}),
    (GERMANY, {"file_name": "germany.md", "page_label": "3", "last_modified_date": "2026-05-01"}),
    (HOTEL, {"file_path": "/srv/docs/travel.txt", "title": "Travel policy"}),
]
QUESTION = "How many weeks of parental leave do employees get?"
GOOD_CLAIM = "Employees are entitled to 16 weeks of paid parental leave."


def reply(*claims: tuple[str, str, str]) -> str:
    """Our contract's JSON answer: each claim ``(text, source id, quote)``."""
    return json.dumps(
        {
            "answerable": True,
            "claims": [{"text": t, "citations": [{"source": s, "quote": q}]} for t, s, q in claims],
        }
    )


GOOD = reply((GOOD_CLAIM, "S1", "entitled to 16 weeks of paid parental leave"))
# A verbatim quote of S3 that says nothing of the claim: decoration.
DECORATED = reply(
    (GOOD_CLAIM, "S1", "entitled to 16 weeks of paid parental leave"),
    (
        "Employees receive 30 weeks of leave in tier 1 cities.",
        "S3",
        "Hotel stays are capped at 180 EUR per night in tier 1 cities.",
    ),
)
INVENTED = reply((GOOD_CLAIM, "S9", "entitled to 16 weeks of paid parental leave"))
ABSTAINED = json.dumps(
    {"answerable": False, "claims": [], "missing": "the documents do not cover pensions"}
)
MARKERS = (
    "Employees are entitled to 16 weeks of paid parental leave [1]. In Germany the company "
    "tops up pay to full salary for the first 14 weeks [2]."
)
MARKERS_INVENTED = "Employees are entitled to 16 weeks of paid parental leave [7]."

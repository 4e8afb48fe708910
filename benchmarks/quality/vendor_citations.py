"""The vendors' own published responses with native citations, verified as a user would.

Reads ``../shared/data/vendor_citations/`` (eleven responses rebuilt from Anthropic's, OpenAI's,
Google's and Cohere's documentation, cookbooks and a published capture, each beside the working
set it cites: see that folder's README for where each came from) and runs ``quotebound.verify``
on each with its vendor's format and the default policy (code checks only, ``strict`` off),
exactly what ``quotebound verify NAME.sources.json NAME.response.json --format VENDOR`` does.

It prints, per response, the claims kept of the claims read, and then every claim not kept
with its reason and each citation's: so a person can read whether each drop is a statement
the model really left uncited (``no_citation``), a fact its source does not hold, or a claim
the verifier should have kept. ``--strict`` verifies under ``Policy(strict=True)`` instead
(what ``ask`` enforces on its own model); ``--json FILE`` writes the rows.

    .venv/bin/python -m benchmarks.quality.vendor_citations
    .venv/bin/python -m benchmarks.quality.vendor_citations --strict
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common import SHARED_DATA
from quotebound import Policy, WorkingSet, verify

DATA = SHARED_DATA / "vendor_citations"


def rows(data: Path, policy: Policy) -> list[dict[str, object]]:
    """One row per response: its name, vendor, claims kept and read, and the claims dropped."""
    out: list[dict[str, object]] = []
    for response in sorted(data.glob("*.response.json")):
        name = response.name.removesuffix(".response.json")
        vendor = name.split("_", 1)[0]
        ws = WorkingSet.from_json(
            json.loads((data / f"{name}.sources.json").read_text(encoding="utf-8"))
        )
        verdict = verify(ws, response.read_text(encoding="utf-8"), vendor, policy)
        dropped = [
            {
                "text": c.text,
                "reason": c.reason,
                "citations": [f"{x.source or x.ref}: {x.reason or 'ok'}" for x in c.citations],
            }
            for c in verdict.claims
            if not c.kept
        ]
        out.append(
            {
                "response": name,
                "vendor": vendor,
                "status": verdict.status,
                "kept": len(verdict.kept_claims),
                "claims": len(verdict.claims),
                "notes": sum(len(getattr(c, "notes", ())) for c in verdict.claims),
                "dropped": dropped,
            }
        )
    return out


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the vendor_citations folder")
    parser.add_argument("--strict", action="store_true", help="verify under Policy(strict=True)")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"needs the public data set in {args.data}")
    # (a build before ``strict`` existed reads with its default policy: ``--strict`` off)
    table = rows(args.data, Policy(strict=True) if args.strict else Policy())
    print("| response | status | claims kept | writing notes |\n|---|---|---:|---:|")
    for row in table:
        print(
            f"| {row['response']} | {row['status']} | {row['kept']} of {row['claims']} | "
            f"{row['notes']} |"
        )
    kept = sum(int(str(r["kept"])) for r in table)
    total = sum(int(str(r["claims"])) for r in table)
    print(f"| all {len(table)} | | {kept} of {total} | |")
    for row in table:
        for claim in row["dropped"]:  # type: ignore[attr-defined]
            print(f"\n{row['response']}: {claim['reason']}: {_short(claim['text'])}")
            for cited in claim["citations"]:
                print(f"    {cited}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

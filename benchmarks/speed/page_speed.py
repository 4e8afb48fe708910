"""Time to the first highlighted page of a cited PDF: find the quote, render the page.

A generated 100-page PDF (kits/pdfkit.py: 40 lines of policy-like text a page, every line
different), a quote on page 73. Timed with ``time.perf_counter``, the median (p50) and p95 of
``--runs`` runs:

- cold: the first call in a fresh process (imports PDFium, opens the file);
- warm: the same call again (what ``page.png`` costs per request: nothing is cached);
- page known: the source's page given (as a trace gives it), against page unknown (the quote
  looked for from page 1, up to ``MAX_PAGES_SEARCHED`` pages).

Run from the repository root:

    .venv/bin/python -m benchmarks.speed.page_speed --runs 20
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from benchmarks.common import ROOT
from kits.pdfkit import make_pdf
from quotebound.originals import pdf_highlights, render_page

PAGES, LINES, TARGET = 100, 40, 73


def document() -> tuple[bytes, str]:
    pages = [
        [
            f"Section {p}.{n}: claims filed under rule {p * 100 + n} are reviewed in {n + 2} days."
            for n in range(LINES)
        ]
        for p in range(1, PAGES + 1)
    ]
    quote = f"claims filed under rule {TARGET * 100 + 17} are reviewed in 19 days"
    return make_pdf(pages), quote


def once(pdf: bytes, quote: str, page: int | None) -> float:
    started = time.perf_counter()
    [found] = pdf_highlights(pdf, page, [quote])
    render_page(pdf, found)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    pdf, quote = document()
    if args.cold:  # one call in this fresh process
        print(f"{once(pdf, quote, TARGET):.4f}")
        return 0
    cold = []
    for _ in range(min(args.runs, 5)):
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.speed.page_speed", "--cold"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        cold.append(float(out.stdout.strip()))
    rows = [("cold, page known (first call in a process)", cold)]
    for label, page in (("warm, page known", TARGET), ("warm, page unknown (searched)", None)):
        rows.append((label, [once(pdf, quote, page) for _ in range(args.runs)]))
    size = len(pdf) / 1e6
    print(f"first highlighted page of a {PAGES}-page PDF ({size:.2f} MB), quote on page {TARGET}")
    print(f"{'case':<46} {'n':>3} {'p50 ms':>8} {'p95 ms':>8}")
    for label, times in rows:
        ordered = sorted(times)
        p50, p95 = statistics.median(times), ordered[max(0, round(0.95 * len(ordered)) - 1)]
        print(f"{label:<46} {len(times):>3} {p50 * 1000:>8.1f} {p95 * 1000:>8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

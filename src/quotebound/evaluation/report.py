"""Rendering an evaluation summary: a plain-text table and a self-contained HTML report.

Invariants: every piece of text from a dataset, a model or a backend is HTML-escaped; plots
are PNGs embedded as base64 ``data:`` URIs (the report is one file, with no external fetch);
matplotlib is imported only when a report is written, with the Agg backend.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError

_PAIR_ROWS = ("accuracy", "balanced_accuracy")
_ANSWER_ROWS = (
    ("citation_validity", "citation validity, id + span (first output)"),
    ("served_citation_validity", "citation validity, id + span (served verdict)"),
    ("citation_checks_passed", "citations passing every check (first output)"),
    ("served_citation_checks_passed", "citations passing every check (served verdict)"),
    ("citation_recall", "citation recall (ALCE)"),
    ("citation_precision", "citation precision (ALCE)"),
    ("kept_claim_support", "kept claims supported"),
    ("abstention_rate", "abstention rate"),
    ("false_abstention_rate", "false abstention rate (lower is better)"),
    ("missed_abstention_rate", "missed abstention rate (lower is better)"),
    ("repair_rate", "repair rate"),
)


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ci(entry: dict[str, Any]) -> str:
    if entry.get("value") is None:
        return "-"
    return f"{_num(entry['value'])}  [{_num(entry.get('low'))}, {_num(entry.get('high'))}]"


def metric_rows(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, estimate) rows of the headline table."""
    metrics = summary["metrics"]
    if summary["dataset"]["task"] == "pairs":
        ent = metrics["entailment"]
        rows = [(name.replace("_", " "), ent[name]) for name in _PAIR_ROWS]
        rows += [(f"F1 {label}", s["f1"]) for label, s in ent["per_label"].items()]
        return rows
    return [(label, metrics[key]) for key, label in _ANSWER_ROWS if key in metrics]


def text_report(summary: dict[str, Any]) -> str:
    """The summary as a few aligned lines for a terminal."""
    ds = summary["dataset"]
    backend = summary.get("backend")
    head = (
        f"{ds['kind']} ({ds['task']}): {summary['examples']} examples"
        f"{', backend ' + backend['name'] + ' ' + backend['version'] if backend else ''}"
        f", {summary['seconds']:.1f}s, seed {summary['seed']}"
    )
    lines = [head]
    if ds["skipped"]:
        lines.append("skipped: " + ", ".join(f"{k} {v}" for k, v in ds["skipped"].items()))
    rows = metric_rows(summary)
    width = max((len(label) for label, _ in rows), default=10)
    for label, entry in rows:
        lines.append(f"  {label:<{width}}  {_ci(entry)}  (n={entry.get('n', 0)})")
    metrics = summary["metrics"]
    if summary["dataset"]["task"] == "pairs":
        ent = metrics["entailment"]
        lines.append(
            "  per label: "
            + "; ".join(
                f"{label} P {_num(s['precision']['value'])} R {_num(s['recall']['value'])} "
                f"F1 {_num(s['f1']['value'])} (support {s['support']})"
                for label, s in ent["per_label"].items()
            )
        )
        lines.append(
            f"  pairs/s {_num(metrics.get('pairs_per_second'))}, "
            f"judgement errors {metrics['judgement_errors']}"
        )
    else:
        lines.append("  statuses: " + ", ".join(f"{k} {v}" for k, v in metrics["statuses"].items()))
    for check in summary.get("fail_under", []):
        state = "ok" if check["passed"] else "FAILED"
        lines.append(
            f"  fail-under {check['metric']} >= {check['threshold']}: "
            f"{_num(check['value'])} {state}"
        )
    return "\n".join(lines)


# --- HTML --------------------------------------------------------------------------------------


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{data}">'


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise InputError("--report needs matplotlib: pip install 'quotebound[entail]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _confusion_plot(plt: Any, entry: dict[str, Any], title: str) -> str:
    labels, matrix = entry["labels"], entry["confusion"]
    fig, ax = plt.subplots(figsize=(1.4 + 1.1 * len(labels), 1.2 + 1.0 * len(labels)))
    try:
        ax.imshow(matrix, cmap="Blues")
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
        ax.set_title(title)
        peak = max((v for row in matrix for v in row), default=0)
        for i, row in enumerate(matrix):
            for j, v in enumerate(row):
                ax.text(
                    j,
                    i,
                    str(v),
                    ha="center",
                    va="center",
                    color="white" if peak and v > peak / 2 else "black",
                )
        return _png(fig)
    finally:
        plt.close(fig)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _bars_plot(plt: Any, rows: Sequence[tuple[str, dict[str, Any]]], title: str) -> str:
    shown = [(label, e) for label, e in rows if e.get("value") is not None]
    fig, ax = plt.subplots(figsize=(6.5, 0.5 + 0.45 * max(1, len(shown))))
    try:
        values = [e["value"] for _, e in shown]
        low = [e["value"] - _or(e.get("low"), e["value"]) for _, e in shown]
        high = [_or(e.get("high"), e["value"]) - e["value"] for _, e in shown]
        ax.barh(range(len(shown)), values, xerr=[low, high], color="#4a7ab5", capsize=3)
        ax.set_yticks(range(len(shown)), [label for label, _ in shown])
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(title)
        return _png(fig)
    finally:
        plt.close(fig)


def _classification_html(plt: Any, entry: dict[str, Any], title: str) -> str:
    per = entry["per_label"]
    rows = [
        (label, s["support"], s["predicted"], _ci(s["precision"]), _ci(s["recall"]), _ci(s["f1"]))
        for label, s in per.items()
    ]
    f1_rows = [(f"F1 {label}", s["f1"]) for label, s in per.items()]
    f1_rows.append(("balanced accuracy", entry["balanced_accuracy"]))
    return (
        f"<h2>{_e(title)}</h2>"
        + _table(
            (
                "label",
                "support",
                "predicted",
                "precision [95% CI]",
                "recall [95% CI]",
                "F1 [95% CI]",
            ),
            rows,
        )
        + "<h3>confusion (rows: gold, columns: predicted)</h3>"
        + _table(
            ("gold \\ predicted", *entry["labels"]),
            [(label, *row) for label, row in zip(entry["labels"], entry["confusion"], strict=True)],
        )
        + '<div class="plots">'
        + _confusion_plot(plt, entry, title)
        + _bars_plot(plt, f1_rows, f"{title}: F1 per label and balanced accuracy, 95% CI")
        + "</div>"
    )


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f2f2f2}.plots img{margin:.5em 1em .5em 0}
td{max-width:38em;overflow-wrap:anywhere}.note{color:#555}
"""


def html_report(summary: dict[str, Any]) -> str:
    """The whole report as one HTML document."""
    plt = _pyplot()
    ds = summary["dataset"]
    backend = summary.get("backend")
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>quotebound eval: {_e(ds['kind'])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>quotebound eval: {_e(ds['kind'])}</h1>",
        _table(
            ("dataset", "task", "examples", "backend", "seconds", "seed"),
            [
                (
                    ", ".join(ds["paths"]) or ds["source"],
                    ds["task"],
                    summary["examples"],
                    f"{backend['name']} {backend['version']}" if backend else "none",
                    summary["seconds"],
                    summary["seed"],
                )
            ],
        ),
    ]
    if ds["skipped"]:
        parts.append(f"<p class='note'>skipped: {_e(ds['skipped'])}</p>")
    rows = metric_rows(summary)
    parts.append("<h2>metrics (95% confidence intervals)</h2>")
    parts.append(
        _table(
            ("metric", "value", "low", "high", "n"),
            [
                (label, _num(e.get("value")), _num(e.get("low")), _num(e.get("high")), e.get("n"))
                for label, e in rows
            ],
        )
    )
    if summary.get("fail_under"):
        parts.append(
            "<h2>gates</h2>"
            + _table(
                ("metric", "threshold", "value", "passed"),
                [
                    (c["metric"], c["threshold"], _num(c["value"]), c["passed"])
                    for c in summary["fail_under"]
                ],
            )
        )
    parts.append(_task_html(plt, summary, rows))
    parts.append("<p class='note'>Metric definitions: docs/evaluation.md.</p></body></html>")
    return "".join(parts)


def _task_html(plt: Any, summary: dict[str, Any], rows: list[tuple[str, dict[str, Any]]]) -> str:
    metrics = summary["metrics"]
    if summary["dataset"]["task"] == "pairs":
        out = _classification_html(plt, metrics["entailment"], "entailment")
        groups = metrics.get("by_group_balanced_accuracy") or {}
        if groups:
            out += "<h2>balanced accuracy by sub-dataset</h2>" + _table(
                ("sub-dataset", "balanced accuracy [95% CI]", "n"),
                [(g, _ci(e), e["n"]) for g, e in groups.items()],
            )
        out += (
            f"<p>pairs/s: {_e(metrics.get('pairs_per_second'))}; judgement errors: "
            f"{_e(metrics['judgement_errors'])}</p>"
        )
        out += "<h2>disagreements (first rows)</h2>" + _table(
            ("id", "claim", "quote", "gold", "original", "predicted", "score", "detail", "error"),
            [
                (
                    d["id"],
                    d["claim"],
                    d["quote"],
                    d["gold"],
                    d["original"],
                    d["predicted"],
                    d["score"],
                    d["detail"],
                    d["error"],
                )
                for d in metrics["disagreements"]
            ],
        )
        return out
    out = '<div class="plots">' + _bars_plot(plt, rows, "answer metrics, 95% CI") + "</div>"
    out += "<h2>statuses</h2>" + _table(("status", "answers"), list(metrics["statuses"].items()))
    for key, title in (
        ("claim_support", "claim support (gold labels)"),
        ("citation_needed", "citation needed (gold labels)"),
    ):
        if key in metrics:
            out += _classification_html(plt, metrics[key], title)
    if metrics.get("unsupported_claims"):
        out += "<h2>claims their citations do not support (first rows)</h2>" + _table(
            ("example", "claim", "kept", "evidence"),
            [
                (u["example"], u["claim"], u["kept"], u["evidence"])
                for u in metrics["unsupported_claims"]
            ],
        )
    return out


def write_html(summary: dict[str, Any], path: Path) -> None:
    try:
        path.write_text(html_report(summary), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the report to {path}: {exc.strerror}") from None

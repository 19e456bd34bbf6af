"""Greedy outputs of A and B request by request (acceptance phase: temperature 0, no stop strings): the same
text, or the first diverging token in the target's tokenizer (report/equality.py; characters when the
tokenizer cannot be loaded on this machine, and the table says so)."""

from __future__ import annotations

from specstack.compare.pairing import OUTPUTS, Pair
from specstack.compare.rows import OutputRow, OutputSummaryRow
from specstack.figures import stats as st
from specstack.figures.equality import compare_texts, not_compared
from specstack.report.acceptance import acceptance_records
from specstack.report.equality import Tokenizers, load_tokenizer, tokenizer_path


def output_rows(
    pairs: list[Pair], tokenizers: Tokenizers | None = None, tokenizer: str | None = None
) -> tuple[list[OutputRow], list[OutputSummaryRow]]:
    """(one row per request id of A, one summary per pair). `tokenizer` overrides the recorded path."""
    tokenizers = tokenizers or Tokenizers()
    rows: list[OutputRow] = []
    summary: list[OutputSummaryRow] = []
    for pair in pairs:
        blocked = pair.not_comparable(OUTPUTS)
        path = tokenizer or tokenizer_path(pair.a) or tokenizer_path(pair.b)
        tok, unit, used = load_tokenizer(tokenizers, path)
        s: OutputSummaryRow = {
            "method": pair.method,
            "label": pair.label,
            "task": pair.task,
            "requests_a": 0,
            "requests_b": 0,
            "compared": 0,
            "same": 0,
            "first_divergence_min": None,
            "unit": unit,
            "tokenizer": used,
            "verdict": None,
        }
        ra, rb = acceptance_records(pair.a, pair.task), acceptance_records(pair.b, pair.task)
        s["requests_a"], s["requests_b"] = len(ra), len(rb)
        if blocked:
            s["verdict"] = blocked
            summary.append(s)
            continue
        theirs = {r["id"]: r for r in rb}
        divergences = []
        for a in ra:
            b = theirs.get(a["id"])
            row: OutputRow = {
                "method": pair.method,
                "task": pair.task,
                "id": a["id"],
                "same": None,
                "first_token_divergence": None,
                "first_char_divergence": None,
                "unit": unit,
                "finish_reason_a": a["finish_reason"],
                "finish_reason_b": b["finish_reason"] if b else None,
                "note": not_compared(a, b, "only in A"),
            }
            if row["note"] is None:
                assert b is not None  # not_compared names a request B did not answer
                out = compare_texts(a["text"], b["text"], tok)
                row["same"] = out["equal"]
                row["first_token_divergence"] = out["first_token_divergence"]
                row["first_char_divergence"] = out["first_char_divergence"]
                s["compared"] += 1
                s["same"] += out["equal"]
                idx = out["first_token_divergence"] if tok is not None else out["first_char_divergence"]
                if idx is not None:
                    divergences.append(idx)
            rows.append(row)
        only_b = [r["id"] for r in rb if r["id"] not in {a["id"] for a in ra}]
        rows += [
            {
                "method": pair.method,
                "task": pair.task,
                "id": i,
                "same": None,
                "first_token_divergence": None,
                "first_char_divergence": None,
                "unit": unit,
                "finish_reason_a": None,
                "finish_reason_b": theirs[i]["finish_reason"],
                "note": "only in B",
            }
            for i in only_b
        ]
        s["first_divergence_min"] = min(divergences) if divergences else None
        s["first_divergence_median"] = st.median(divergences)
        if not s["compared"]:
            s["verdict"] = "n/a (no request answered on both sides)"
        elif s["same"] == s["compared"]:
            complete = not only_b and s["compared"] == len(ra)
            s["verdict"] = (
                "same" if complete else f"same where compared ({s['compared']} of {len(ra) + len(only_b)} requests)"
            )
        else:
            s["verdict"] = f"changed ({s['compared'] - s['same']} of {s['compared']} differ)"
        summary.append(s)
    return rows, summary

"""Output equality against the baseline (acceptance phase only): per request, equal or the first diverging
index in target-tokenizer tokens (characters when the tokenizer cannot be loaded); the comparison of two
outputs itself is figures/equality.py."""

from __future__ import annotations

from pathlib import Path

from specstack.figures import stats as st
from specstack.figures.equality import Encoder, compare_texts, divergence_at_baseline, is_near_tie, not_compared
from specstack.report.acceptance import acceptance_records, distinct_outputs
from specstack.report.rows import EqualityRequestRow, EqualitySummaryRow
from specstack.results.reader import MethodData, RunData


class Tokenizers:
    """The target's tokenizer (transformers AutoTokenizer), loaded once per path; None + reason on failure."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[Encoder | None, str | None]] = {}

    def get(self, path: str | None) -> tuple[Encoder | None, str | None]:
        if not path:
            return None, "no tokenizer path in the summary"
        if path not in self._cache and path.startswith(("/", ".", "~")) and not Path(path).expanduser().exists():
            self._cache[path] = (None, f"no folder {path} on this machine")
        if path not in self._cache:
            try:
                from transformers import AutoTokenizer

                self._cache[path] = (AutoTokenizer.from_pretrained(path), None)
            except Exception as e:  # noqa: BLE001 - any failure means: fall back to characters, and say so
                self._cache[path] = (None, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
        return self._cache[path]


def load_tokenizer(tokenizers: Tokenizers, path: str | None) -> tuple[Encoder | None, str, str]:
    """(tokenizer or None, the unit divergence indices count in, how a table names what was used)."""
    tok, why = tokenizers.get(path)
    if tok is None or not path:  # no path: never a tokenizer
        return None, "character", f"not loaded ({why}); character index"
    return tok, "token", path


def tokenizer_path(md: MethodData) -> str | None:
    server = md.record.server_facts
    return server.root_model or server.target


def equality_rows(
    run: RunData, tokenizers: Tokenizers | None = None, tokenizer: str | None = None
) -> tuple[list[EqualityRequestRow], list[EqualitySummaryRow]]:
    """(one row per request, one summary per method × task). `tokenizer` overrides the recorded path: a bundle
    moved to another machine names a target folder that is not there."""
    tokenizers = tokenizers or Tokenizers()
    rows: list[EqualityRequestRow] = []
    summary: list[EqualitySummaryRow] = []
    for md in run.methods.values():
        if not md.baseline:
            continue
        base = run.methods.get(md.baseline)
        for task in run.tasks:
            if task not in md.task_figures:
                continue
            s: EqualitySummaryRow = {
                "method": md.name,
                "label": md.display_name,
                "baseline": md.baseline,
                "task": task,
                "comparable": md.comparable,
                "server_contradicted": bool(md.server_contradictions),
                "requests": 0,
                "distinct_outputs": None,
                "baseline_distinct_outputs": None,
                "compared": 0,
                "equal": 0,
                "equal_rate": None,
                "finish_reason_differs": 0,
                "first_divergence_min": None,
                "first_divergence_median": None,
                "near_ties": None,
                "unit": None,
                "tokenizer": None,
                "dtype": None,
                "note": None,
            }
            if base is None:
                s["note"] = f"baseline {md.baseline!r} missing or failed"
                summary.append(s)
                continue
            # ties are judged at the resolution of the dtype the baseline computed its answers and log-probs in
            s["dtype"] = dtype = base.record.server_facts.dtype
            tok_path = tokenizer or tokenizer_path(base) or tokenizer_path(md)
            tok, s["unit"], s["tokenizer"] = load_tokenizer(tokenizers, tok_path)
            theirs = {r["id"]: r for r in acceptance_records(base, task)}
            mine = acceptance_records(md, task)
            # how many different answers the verdict rests on, on each side (16 equal answers of 3 kinds are 3)
            s["distinct_outputs"], s["baseline_distinct_outputs"] = (
                distinct_outputs(mine),
                distinct_outputs(list(theirs.values())),
            )
            divergences, kinds = [], []
            for a in mine:
                b = theirs.get(a["id"])
                s["requests"] += 1
                row: EqualityRequestRow = {
                    "method": md.name,
                    "baseline": md.baseline,
                    "task": task,
                    "id": a["id"],
                    "equal": None,
                    "first_token_divergence": None,
                    "first_char_divergence": None,
                    "unit": s["unit"],
                    "finish_reason": a["finish_reason"],
                    "baseline_finish_reason": b["finish_reason"] if b else None,
                    "completion_tokens": (a["usage"] or {}).get("completion_tokens"),
                    "baseline_completion_tokens": ((b or {}).get("usage") or {}).get("completion_tokens"),
                    "divergence_gap_nats": None,
                    "divergence_kind": None,
                    "divergence_cause": None,
                    "note": not_compared(a, b, "no baseline response with this id"),
                }
                if row["note"] is None and b is not None:  # a missing baseline response has a note
                    same = compare_texts(a["text"], b["text"], tok)
                    row["equal"] = same["equal"]
                    row["first_token_divergence"] = same["first_token_divergence"]
                    row["first_char_divergence"] = same["first_char_divergence"]
                    s["compared"] += 1
                    s["equal"] += row["equal"]
                    s["finish_reason_differs"] += a["finish_reason"] != b["finish_reason"]
                    idx = row["first_token_divergence"] if tok is not None else row["first_char_divergence"]
                    if idx is not None:
                        divergences.append(idx)
                        at = divergence_at_baseline(a["token_ids"], b["token_ids"], b["top_logprobs"], dtype)
                        row["divergence_gap_nats"], row["divergence_kind"] = at["gap_nats"], at["kind"]
                        row["divergence_cause"] = at["cause"]
                        kinds.append(at["kind"])
                rows.append(row)
            s["equal_rate"] = s["equal"] / s["compared"] if s["compared"] else None
            s["first_divergence_min"] = min(divergences) if divergences else None
            s["first_divergence_median"] = st.median(divergences)
            # near ties among the divergences, where the baseline's log-probabilities say (None: none says)
            s["near_ties"] = sum(is_near_tie(k) for k in kinds) if any(kinds) else None
            summary.append(s)
    return rows, summary

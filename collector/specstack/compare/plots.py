"""The comparison's figure: per-position acceptance of A against B, one panel per task, one PNG per method."""

from __future__ import annotations

import matplotlib.pyplot as plt

from specstack.report import plots as rp


def positions_a_vs_b(
    method: str, per_task: dict[str, tuple[list[float] | None, list[float] | None]], label_a: str, label_b: str
) -> bytes:
    """Bars of A and B per draft position (vLLM's convention: steps accepting at least p+1 drafts ÷ drafting
    steps); a panel says n/a where neither side drafted."""
    tasks = list(per_task)
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(5.6 * max(1, len(tasks)), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        a, b = per_task[task]
        ax.set_title(f"Acceptance by draft position: {method}, {task}", fontsize=9)
        if not a and not b:
            rp.no_data(ax, "n/a (no drafts)")
            continue
        k = max(len(a or []), len(b or []))
        for i, (values, label, color) in enumerate(((a, label_a, rp.BLUE), (b, label_b, rp.ORANGE))):
            if not values:
                continue
            bars = ax.bar(
                [p + (i - 0.5) * 0.4 for p in range(len(values))], values, width=0.4, label=label, color=color
            )
            if k <= 8:
                ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7)
        ax.set_xticks(range(k), [str(p) for p in range(k)])
        ax.set_xlabel("draft position (0 = first draft token)")
        ax.set_ylabel("≥ p+1 accepted / drafting steps")
        ax.set_ylim(0, 1.1)
        ax.legend(fontsize=8)
    return rp.png_bytes(fig)

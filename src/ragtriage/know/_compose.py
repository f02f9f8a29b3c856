"""Label composition of a test set (seed 001, Fig. 1 / Table 3) and the warning the
paper motivates: retrieval tuned on an unbalanced test set is tuned for the wrong users.

Renders as a terminal table, a CSV and a self-contained HTML page.
"""

from __future__ import annotations

import csv
import html
import io
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtriage.know._taxonomy import LABELS, UNDETERMINED, LabelDecision

__all__ = [
    "DOMINANT_SHARE",
    "RARE_SHARE",
    "Composition",
    "composition",
    "composition_csv",
    "composition_html",
    "composition_rows",
    "write_label_outputs",
]

#: a label above this share makes the test set one-sided
DOMINANT_SHARE = 0.6
#: an answerable label under this share gets no trustworthy per-label figure
RARE_SHARE = 0.05

_ASKS = {
    "fact_single": "for single facts",
    "summary": "for summaries",
    "reasoning": "reasoning questions",
}


@dataclass(frozen=True, slots=True)
class Composition:
    """Label counts of one labelled set; shares are over the determined labels."""

    name: str
    counts: Mapping[str, int]
    undetermined: int
    intended: Mapping[str, float] | None = None

    @property
    def determined(self) -> int:
        return sum(self.counts.values())

    @property
    def total(self) -> int:
        return self.determined + self.undetermined

    def share(self, label: str) -> float | None:
        """Share of ``label`` among the determined labels (``None`` when none is)."""
        return None if self.determined == 0 else self.counts.get(label, 0) / self.determined

    def max_gap(self) -> float | None:
        """Largest |measured − intended| share over the labels (``None`` without an
        intended mix or a determined label)."""
        if self.intended is None or self.determined == 0:
            return None
        return max(abs((self.share(lab) or 0.0) - self.intended.get(lab, 0.0)) for lab in LABELS)

    def warnings(self) -> list[str]:
        """What a RAG engineer should hear about this composition."""
        out: list[str] = []
        if self.determined == 0:
            return [f"{self.name}: no pair could be labelled ({self.undetermined} undetermined)"]
        top = max(LABELS, key=lambda lab: self.counts.get(lab, 0))
        top_share = self.share(top) or 0.0
        if top_share >= DOMINANT_SHARE:
            rare = [lab for lab in LABELS[:3] if lab != top]
            asks = " or ".join(_ASKS[lab] for lab in rare)
            out.append(
                f"your test set is {top_share:.0%} {top}; if your users ask {asks}, "
                "retrieval tuned on it will be wrong (seed 001 §5: the best text weight "
                "differs per label)"
            )
        for lab in LABELS[:3]:
            s = self.share(lab) or 0.0
            if s < RARE_SHARE and lab != top:
                out.append(
                    f"only {s:.0%} {lab} ({self.counts.get(lab, 0)} pairs): per-label "
                    f"retrieval figures for it are noise; generate more with "
                    f"`ragtriage testset --mix {lab}:...`"
                )
        if self.undetermined:
            out.append(f"{self.undetermined} of {self.total} pairs are undetermined")
        gap = self.max_gap()
        if gap is not None and gap > 0.10:
            out.append(f"measured composition is {gap:.0%} away from the intended mix")
        return out


def composition(
    decisions: Sequence[LabelDecision], name: str, intended: Mapping[str, float] | None = None
) -> Composition:
    counts = Counter(d.label for d in decisions)
    undetermined = counts.pop(UNDETERMINED, 0)
    return Composition(
        name=name,
        counts={lab: counts.get(lab, 0) for lab in LABELS},
        undetermined=undetermined,
        intended=intended,
    )


def composition_rows(comp: Composition) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for lab in (*LABELS, UNDETERMINED):
        count = comp.undetermined if lab == UNDETERMINED else comp.counts.get(lab, 0)
        share = None if lab == UNDETERMINED else comp.share(lab)
        row: dict[str, object] = {
            "dataset": comp.name,
            "label": lab,
            "count": count,
            "share": "" if share is None else round(share, 4),
        }
        if comp.intended is not None:
            row["intended"] = "" if lab == UNDETERMINED else round(comp.intended.get(lab, 0.0), 4)
        rows.append(row)
    return rows


def composition_csv(comps: Sequence[Composition]) -> str:
    buf = io.StringIO()
    rows = [r for c in comps for r in composition_rows(c)]
    fields = ["dataset", "label", "count", "share"]
    if any("intended" in r for r in rows):
        fields.append("intended")
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


_COLOURS = {
    "fact_single": "#4e79a7",
    "summary": "#f28e2b",
    "reasoning": "#59a14f",
    "unanswerable": "#bab0ac",
}


def composition_html(comps: Sequence[Composition], *, title: str = "Label composition") -> str:
    """A self-contained page: one stacked bar per dataset (seed 001, Fig. 1), the counts
    table and the warnings."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:60em}"
        ".bar{display:flex;height:1.8em;border:1px solid #999;margin:.3em 0 1em}"
        ".bar div{color:#fff;font-size:.8em;line-height:2.2em;text-align:center;overflow:hidden}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em}"
        ".warn{color:#a33}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<p>Labels of seed 001 (Know Your RAG, Table 1): "
        + ", ".join(
            f"<span style='color:{_COLOURS[lab]}'>&#9632;</span> {html.escape(lab)}"
            for lab in LABELS
        )
        + "</p>",
    ]
    for comp in comps:
        parts.append(f"<h2>{html.escape(comp.name)} ({comp.total} pairs)</h2><div class='bar'>")
        for lab in LABELS:
            s = comp.share(lab) or 0.0
            if s > 0:
                parts.append(
                    f"<div style='width:{s * 100:.2f}%;background:{_COLOURS[lab]}' "
                    f"title='{lab} {s:.1%}'>{html.escape(lab)} {s:.0%}</div>"
                )
        parts.append("</div><table><tr><th>label</th><th>count</th><th>share</th>")
        if comp.intended is not None:
            parts.append("<th>intended</th>")
        parts.append("</tr>")
        for row in composition_rows(comp):
            share = row["share"]
            cells = [
                html.escape(str(row["label"])),
                str(row["count"]),
                "" if share == "" else f"{float(str(share)):.1%}",
            ]
            if "intended" in row:
                i = row["intended"]
                cells.append("" if i == "" else f"{float(str(i)):.1%}")
            parts.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        parts.append("</table>")
        for w in comp.warnings():
            parts.append(f"<p class='warn'>&#9888; {html.escape(w)}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_label_outputs(
    out: Path, decisions: Sequence[LabelDecision], comps: Sequence[Composition]
) -> list[Path]:
    """``labels.jsonl``, ``composition.csv`` and ``composition.html`` under ``out``
    (atomic writes); the paths written."""
    from ragtriage.jsonl import atomic_write_text, write_jsonl

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "labels.jsonl", out / "composition.csv", out / "composition.html"]
    write_jsonl(paths[0], [d.to_json() for d in decisions])
    atomic_write_text(paths[1], composition_csv(comps))
    atomic_write_text(paths[2], composition_html(comps))
    return paths

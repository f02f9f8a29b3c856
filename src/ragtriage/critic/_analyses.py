"""Error mining on free-text analyses (seed 004 §3.1, on rationales rather than tags).

The paper mines error types from the critic's *error analyses*. :mod:`._mine` clusters
open-set tags; offline those tags were the tool's own type and stage names, so the
clustering could only rediscover the taxonomy. Here the input is the analyses themselves:

* **analyses**: the rules diagnoses' reasons and findings (the ``Exx Name (0.80):`` label
  in front of a finding and the engine's bookkeeping lines — votes, priors, reference
  overlap — are not analysis and are left out), the critic's ``analysis`` of its Error
  verdicts, and imported rationales (a labels file's ``rationale`` column, e.g. the human
  labels of ``benchmarks/data/natural/nat*/labels.jsonl``);
* **masking**: what names a label or an instance rather than a failure is removed —
  RAGEC codes and names, the RAG-Critic tier-1/tier-2 names, chunk ids, quoted values
  (``'…'``, ``{…}``), numbers, and, when the trace is known, the words of its question and
  gold answer (the entities and values of that one example); in an analysis written
  mostly in Latin script, CJK characters are quoted values too (and vice versa);
* **vectors**: TF-IDF over the masked words and word bigrams (scikit-learn), rows L2
  normalised; **clusters**: Ward agglomerative clustering into the given number of
  clusters, or sqrt(n/2);
* **names**: each cluster's most distinctive terms (class-based TF-IDF: a term's share of
  the cluster's weight against its share over all clusters), never a taxonomy name since
  those are masked; an LLM may name the clusters instead (:func:`llm_cluster_names`);
* **what is new**: each cluster's centroid (mean embedding of its masked analyses) against
  every existing error type — the 16 RAGEC types (name and definition) and the 19
  RAG-Critic tier-2 types (name, tier-1 and tier-3 tags) — by cosine similarity; below
  ``threshold`` the cluster is reported ``new``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtriage.errors import InputError
from ragtriage.records import ERROR_TYPE_NAMES, Diagnosis, ErrorType, Trace
from ragtriage.text import STOPWORDS_EN, STOPWORDS_ZH, cjk_ratio, is_cjk, word_tokens

if TYPE_CHECKING:
    import numpy as np

    from ragtriage.critic._critic import CriticVerdict

__all__ = [
    "Analysis",
    "AnalysisCluster",
    "AnalysisMining",
    "KnownType",
    "analyses_of_diagnoses",
    "analyses_of_labels",
    "analyses_of_verdicts",
    "analysis_terms",
    "known_types",
    "llm_cluster_names",
    "mask_analysis",
    "mine_analyses",
    "mine_run_analyses",
    "read_analyses",
]


@dataclass(frozen=True)
class Analysis:
    """One free-text analysis of one failing example.

    ``label`` is the type its author gave (a RAGEC code, a tier-2 name), kept only to
    score a clustering; it is never shown to the clustering. ``context`` is the example's
    own text (question, gold answer) whose words are masked."""

    item_id: str
    text: str
    source: str
    label: str | None = None
    context: str = ""


@dataclass(frozen=True)
class KnownType:
    """An existing error type to compare mined clusters with."""

    system: str  # "RAGEC" or "RAG-Critic"
    name: str
    text: str  # what is embedded: name and definition / tier-3 tags


@dataclass
class AnalysisCluster:
    cluster_id: int
    name: str
    terms: list[str]
    size: int
    nearest: str
    nearest_system: str
    similarity: float
    new: bool
    examples: list[str]
    item_ids: list[str]
    sources: dict[str, int]
    labels: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.cluster_id,
            "name": self.name,
            "terms": self.terms,
            "size": self.size,
            "nearest_type": self.nearest,
            "nearest_system": self.nearest_system,
            "similarity": round(self.similarity, 3),
            "new": self.new,
            "examples": self.examples,
            "sources": self.sources,
            "labels": self.labels,
            "items": self.item_ids,
        }


@dataclass
class AnalysisMining:
    clusters: list[AnalysisCluster]
    threshold: float
    n_analyses: int
    n_used: int
    silhouette: float | None
    assignments: list[int]  # cluster of each used analysis, in input order (-1: not used)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mined_on": "analyses",
            "analyses": self.n_analyses,
            "used": self.n_used,
            "threshold": self.threshold,
            "silhouette": None if self.silhouette is None else round(self.silhouette, 3),
            "clusters": [c.to_dict() for c in self.clusters],
        }

    def lines(self, *, examples: int = 2, width: int = 120) -> list[str]:
        """A plain-text table: size, name, nearest type and similarity, new, examples."""
        out: list[str] = []
        for c in self.clusters:
            flag = "NEW" if c.new else "   "
            out.append(
                f"{c.size:4d}  {flag}  {c.name}  ~ {c.nearest} ({c.nearest_system}) "
                f"{c.similarity:.2f}"
            )
            for ex in c.examples[:examples]:
                text = ex if len(ex) <= width else ex[: width - 1] + "…"
                out.append(f"            - {text}")
        return out


# -- collecting analyses ---------------------------------------------------------------

#: The engine's bookkeeping evidence lines: counts and priors, not an analysis.
_BOOKKEEPING = re.compile(
    r"^(votes:|weak prior\b|ground-truth chunks \(references\)|confidence\b)", re.IGNORECASE
)
#: The type label in front of a finding: ``E4 Missed Retrieval (0.80): …``.
_FINDING_LABEL = re.compile(r"^E\d{1,2}\b[^:]*?(\(\d(?:\.\d+)?\))?:\s*")


def _finding_text(line: str) -> str | None:
    text = line.strip()
    if not text or _BOOKKEEPING.match(text):
        return None
    return _FINDING_LABEL.sub("", text, count=1)


def _trace_context(trace: Trace | None) -> str:
    if trace is None:
        return ""
    ex = trace.example
    return " ".join([ex.query, ex.answer, *ex.keypoints])


def analyses_of_diagnoses(
    diagnoses: Iterable[Diagnosis], traces: Mapping[str, Trace] | None = None
) -> list[Analysis]:
    """The failing diagnoses' reasons and findings (labels and bookkeeping left out)."""
    out: list[Analysis] = []
    for d in diagnoses:
        if not d.needs_diagnosis or d.answer_label is None:
            continue
        parts = [d.answer_reason, d.stage_reason]
        parts += [t for t in (_finding_text(e) for e in d.evidence) if t]
        text = "; ".join(p.strip() for p in parts if p and p.strip())
        if text:
            trace = (traces or {}).get(d.example_id)
            label = d.error_type.value if d.error_type is not None else None
            out.append(Analysis(d.example_id, text, "diagnosis", label, _trace_context(trace)))
    return out


def analyses_of_verdicts(
    verdicts: Iterable[CriticVerdict], traces: Mapping[str, Trace] | None = None
) -> list[Analysis]:
    """The ``analysis`` of the critic's Error verdicts."""
    out: list[Analysis] = []
    for v in verdicts:
        if v.judgement != "error" or not v.analysis.strip():
            continue
        trace = (traces or {}).get(v.example_id)
        label = v.tier2[0] if v.tier2 else None
        out.append(
            Analysis(v.example_id, v.analysis, f"critic:{v.critic}", label, _trace_context(trace))
        )
    return out


def analyses_of_labels(
    labels: Iterable[Any], traces: Mapping[str, Trace] | None = None
) -> list[Analysis]:
    """The rationales of failing human labels (:class:`~ragtriage.calibrate.agreement.
    HumanLabel`: a stage given, a non-empty ``rationale``)."""
    out: list[Analysis] = []
    for lab in labels:
        if lab.stage is None or not (lab.rationale or "").strip():
            continue
        trace = (traces or {}).get(lab.example_id)
        label = lab.types[0].value if lab.types else None
        out.append(
            Analysis(
                lab.example_id,
                lab.rationale,
                f"labels:{lab.annotator}",
                label,
                _trace_context(trace),
            )
        )
    return out


def read_analyses(path: str | Path, traces: Mapping[str, Trace] | None = None) -> list[Analysis]:
    """Analyses of a JSONL file, by what its first row holds: a labels file
    (``rationale``), critic verdicts (``judgement`` and ``analysis``) or diagnoses
    (``needs_diagnosis``). Anything else is an :class:`InputError` naming the file."""
    from ragtriage.jsonl import iter_json_lines

    p = Path(path)
    first: dict[str, Any] | None = None
    for _lineno, row in iter_json_lines(p):
        first = row
        break
    if first is None:
        raise InputError("no rows (read as JSONL)", path=str(p))
    if "rationale" in first:
        from ragtriage.calibrate.agreement import read_labels

        return analyses_of_labels(read_labels(p), traces)
    if "judgement" in first and "analysis" in first:
        from ragtriage.critic._critic import CriticVerdict
        from ragtriage.jsonl import read_records

        return analyses_of_verdicts(read_records(p, CriticVerdict), traces)
    if "needs_diagnosis" in first:
        from ragtriage.store import read_diagnoses

        return analyses_of_diagnoses(read_diagnoses(p), traces)
    raise InputError(
        "read as JSONL, its first row has none of 'rationale' (labels), 'judgement' + "
        "'analysis' (critic.jsonl) or 'needs_diagnosis' (diagnoses.jsonl)",
        path=str(p),
        line=1,
        field="rationale",
    )


# -- masking -------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _taxonomy_names() -> tuple[str, ...]:
    from ragtriage.critic._system import error_system

    system = error_system()
    names = {*ERROR_TYPE_NAMES.values(), *system.tier1, *system.tier2_names}
    return tuple(sorted(names, key=lambda n: (-len(n), n)))


@lru_cache(maxsize=1)
def _taxonomy_re() -> re.Pattern[str]:
    alts = "|".join(re.escape(n) for n in _taxonomy_names())
    return re.compile(rf"\b(?:{alts})\b", re.IGNORECASE)


_CODE = re.compile(r"\bE\d{1,2}\b")
_CHUNK_ID = re.compile(r"[\w.-]*#\d+(?:[-/]#?\d+)*")
_QUOTED = re.compile(
    r"(?<!\w)'[^'\n]{1,400}'(?!\w)|\"[^\"\n]{1,400}\"|[“‘「『][^”’」』\n]{1,400}[”’」』]"
)
_BRACED = re.compile(r"\{[^{}\n]{0,400}\}")


def mask_analysis(text: str) -> str:
    """``text`` without taxonomy codes and names, chunk ids, quoted and braced values."""
    t = _BRACED.sub(" ", text)
    t = _QUOTED.sub(" ", t)
    t = _CHUNK_ID.sub(" ", t)
    t = _CODE.sub(" ", t)
    t = _taxonomy_re().sub(" ", t)
    return " ".join(t.split())


_STOP = STOPWORDS_EN | STOPWORDS_ZH


def analysis_terms(text: str, context: str = "") -> list[str]:
    """Masked words and word bigrams of an analysis (numbers, one-letter words,
    stopwords, the other script's characters and the context's words left out)."""
    masked = mask_analysis(text)
    cjk_text = cjk_ratio(masked) >= 0.5
    drop = set(word_tokens(context)) if context else set()
    words: list[str] = []
    for tok in word_tokens(masked):
        if tok in _STOP or tok in drop or any(ch.isdigit() for ch in tok):
            continue
        if any(is_cjk(ch) for ch in tok) != cjk_text or not tok[0].isalnum():
            continue
        if not cjk_text and (len(tok) < 2 or not any(ch.isalpha() for ch in tok)):
            continue
        words.append(tok)
    joiner = "" if cjk_text else " "
    return words + [a + joiner + b for a, b in itertools.pairwise(words) if a != b]


# -- known types ---------------------------------------------------------------------


@lru_cache(maxsize=1)
def known_types() -> tuple[KnownType, ...]:
    """The 16 RAGEC types (name: definition) and the 19 RAG-Critic tier-2 types (name,
    tier-1, tier-3 tags)."""
    from ragtriage.critic._system import error_system
    from ragtriage.judge.prompts import TYPE_DESCRIPTIONS

    out = [
        KnownType("RAGEC", f"{t.value} {ERROR_TYPE_NAMES[t]}", f"{ERROR_TYPE_NAMES[t]}: {d}")
        for t, d in ((t, TYPE_DESCRIPTIONS[t]) for t in ErrorType)
    ]
    for t2 in error_system().tier2:
        tags = ", ".join(t2.tier3[:40])
        out.append(KnownType("RAG-Critic", t2.name, f"{t2.name} ({t2.tier1}): {tags}"))
    return tuple(out)


# -- clustering ----------------------------------------------------------------------


def _ward(x: np.ndarray[Any, Any], k: int) -> list[int]:
    from sklearn.cluster import AgglomerativeClustering

    return [int(v) for v in AgglomerativeClustering(n_clusters=k, linkage="ward").fit_predict(x)]


def _silhouette(x: np.ndarray[Any, Any], labels: Sequence[int]) -> float | None:
    from sklearn.metrics import silhouette_score

    if not 2 <= len(set(labels)) < len(labels):
        return None
    return float(silhouette_score(x, list(labels), metric="cosine"))


def _distinctive_terms(counts: Sequence[Counter[str]], n_terms: int) -> list[list[str]]:
    """Class-based TF-IDF: a term's weight in a cluster against its weight in all."""
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c)
    avg = sum(sum(c.values()) for c in counts) / max(1, len(counts))
    out: list[list[str]] = []
    for c in counts:
        size = sum(c.values()) or 1
        scored = sorted(
            ((c[t] / size) * math.log(1 + avg / total[t]), t) for t in c if c[t] >= 2 or len(c) < 5
        )
        scored.sort(key=lambda st: (-st[0], st[1]))
        chosen: list[str] = []
        for _score, term in scored:
            words = set(term.split())
            if any(term in ch or (words and words <= set(ch.split())) for ch in chosen):
                continue
            # a bigram replaces the unigram it contains
            chosen = [ch for ch in chosen if not (set(ch.split()) < words)]
            chosen.append(term)
            if len(chosen) >= n_terms:
                break
        out.append(chosen)
    return out


def mine_analyses(
    analyses: Sequence[Analysis],
    embedder: Any,
    *,
    n_clusters: int | None = None,
    max_clusters: int = 20,
    threshold: float = 0.5,
    n_terms: int = 3,
    n_examples: int = 3,
    min_df: int = 2,
) -> AnalysisMining:
    """Cluster the masked analyses and name, place and flag each cluster.

    ``n_clusters=None`` takes k = sqrt(n/2) (at most ``max_clusters``): on these texts
    the cosine silhouette only grows with k (two annotators' near-identical rationales
    pair up), so it cannot choose k; it is reported. Analyses with
    no term left after masking (or only terms seen in fewer than ``min_df`` analyses) are
    not clustered (``n_used`` counts the rest). ``embedder`` embeds the masked analyses
    and the known types for the similarity.
    """
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    terms = [analysis_terms(a.text, a.context) for a in analyses]
    keep = [i for i, t in enumerate(terms) if t]
    empty = AnalysisMining([], threshold, len(analyses), 0, None, [-1] * len(analyses))
    if len(keep) < 2:
        return empty
    vec = TfidfVectorizer(
        analyzer=lambda doc: doc,  # already terms
        min_df=min(min_df, len(keep)),
        sublinear_tf=True,
        norm="l2",
    )
    try:
        x = vec.fit_transform([terms[i] for i in keep])
    except ValueError:  # no term left at min_df
        return empty
    rows = np.asarray(x.sum(axis=1)).ravel() > 0
    keep = [i for i, ok in zip(keep, rows, strict=True) if ok]
    if len(keep) < 2:
        return empty
    dense = np.asarray(x[rows].todense(), dtype=np.float64)
    k = min(max_clusters, round(math.sqrt(len(keep) / 2))) if n_clusters is None else n_clusters
    k = max(1, min(k, len(keep)))
    labels = _ward(dense, k) if k > 1 else [0] * len(keep)
    silhouette = _silhouette(dense, labels)
    vocab = set(vec.vocabulary_)
    members: dict[int, list[int]] = {}
    for row, lab in enumerate(labels):
        members.setdefault(lab, []).append(row)
    order = sorted(members, key=lambda c: (-len(members[c]), c))
    counts = [
        Counter(t for row in members[c] for t in terms[keep[row]] if t in vocab) for c in order
    ]
    names = _distinctive_terms(counts, n_terms)
    # similarity to the known types, in the embedder's space, on the masked text
    types = known_types()
    masked = [mask_analysis(analyses[i].text) for i in keep]
    emb = _unit(np.asarray(embedder.embed(masked), dtype=np.float64))
    temb = _unit(np.asarray(embedder.embed([t.text for t in types]), dtype=np.float64))
    clusters: list[AnalysisCluster] = []
    assignments = [-1] * len(analyses)
    for new_id, (cid, cterms) in enumerate(zip(order, names, strict=True)):
        pos = members[cid]
        centroid = _unit(emb[pos].mean(axis=0, keepdims=True))[0]
        sims = temb @ centroid
        best = int(np.argmax(sims))
        # examples: the analyses closest to the cluster's TF-IDF centroid
        tcent = dense[pos].mean(axis=0)
        ranked = sorted(pos, key=lambda p: (-float(dense[p] @ tcent), p))
        examples: list[str] = []
        for p in ranked:
            text = " ".join(analyses[keep[p]].text.split())
            if text not in examples:
                examples.append(text)
            if len(examples) >= n_examples:
                break
        for p in pos:
            assignments[keep[p]] = new_id
        items = [analyses[keep[p]] for p in pos]
        clusters.append(
            AnalysisCluster(
                cluster_id=new_id,
                name=", ".join(cterms) if cterms else f"cluster {new_id}",
                terms=cterms,
                size=len(pos),
                nearest=types[best].name,
                nearest_system=types[best].system,
                similarity=float(sims[best]),
                new=bool(sims[best] < threshold),
                examples=examples,
                item_ids=sorted({a.item_id for a in items}),
                sources=dict(Counter(a.source.split(":")[0] for a in items).most_common()),
                labels=dict(Counter(a.label for a in items if a.label).most_common()),
            )
        )
    return AnalysisMining(clusters, threshold, len(analyses), len(keep), silhouette, assignments)


def _unit(m: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    import numpy as np

    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.asarray(m / np.where(norms == 0, 1.0, norms))


# -- LLM naming (optional) -----------------------------------------------------------


def analysis_summary_prompt(examples: Sequence[str]) -> str:
    # Adapted from seed 004 (RAG-Critic) §3.1.3: one summary per cluster of error analyses.
    listing = "\n".join(f"- {e}" for e in examples)
    return (
        "These error analyses of a retrieval-augmented generation system were grouped "
        f"together:\n{listing}\n\nName the kind of failure they share in at most six "
        "words. Reply with the name only."
    )


async def llm_cluster_names(
    mining: AnalysisMining, runner: Any, *, model: str = "", k: int = 10
) -> dict[int, str]:
    """An LLM name per cluster from up to ``k`` of its analyses; a failed call or an
    unusable reply keeps the offline name (the cluster is left out of the result)."""
    from ragtriage.llm import ChatRequest, LLMFailure

    names: dict[int, str] = {}
    for c in mining.clusters:
        req = ChatRequest.of(
            None, analysis_summary_prompt(c.examples[:k]), model=model, max_tokens=32
        )
        got = await runner.try_complete(req, purpose="mine_summary")
        if isinstance(got, LLMFailure):
            continue
        name = " ".join(got.text.strip().strip("\"'`").split())
        if name and len(word_tokens(name)) <= 12:
            names[c.cluster_id] = name
    return names


async def mine_run_analyses(
    traces: Sequence[Trace],
    diagnoses: Sequence[Diagnosis],
    verdicts: Sequence[CriticVerdict],
    embedder: Any,
    *,
    rationales: Sequence[str | Path] = (),
    n_clusters: int | None = None,
    threshold: float = 0.5,
    runner: Any = None,
    model: str = "",
) -> AnalysisMining:
    """Mine the analyses of runs (failing diagnoses, Error verdicts) and of ``rationales``
    files (:func:`read_analyses`); the traces' questions and gold answers are masked.
    With a ``runner`` an LLM names the clusters (the offline name stays where it fails)."""
    by_id = {t.example.example_id: t for t in traces}
    analyses = analyses_of_diagnoses(diagnoses, by_id) + analyses_of_verdicts(verdicts, by_id)
    for path in rationales:
        analyses += read_analyses(path, by_id)
    mining = mine_analyses(analyses, embedder, n_clusters=n_clusters, threshold=threshold)
    if runner is not None:
        names = await llm_cluster_names(mining, runner, model=model)
        for c in mining.clusters:
            c.name = names.get(c.cluster_id, c.name)
    return mining

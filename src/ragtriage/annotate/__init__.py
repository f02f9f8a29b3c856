"""Human annotation of a run for ``ragtriage serve``: per-annotator label files
(atomic appends, resumable), label sets (RAGEC, RAG-Critic tiers, a mined taxonomy),
the live agreement panel (the numbers ``ragtriage agree`` prints) and sampling."""

from ragtriage.annotate._agreement import (
    AgreementPanel,
    PairAgreement,
    agreement_panel,
    human_labels,
)
from ragtriage.annotate._labels import BUILTIN_TAXONOMIES, LabelSet, label_set
from ragtriage.annotate._sampling import STRATEGIES, sample_order
from ragtriage.annotate._store import (
    ANNOTATIONS_DIR,
    ANNOTATOR_RE,
    Annotation,
    AnnotationStore,
    check_annotator,
    validate_annotation,
)

__all__ = [
    "ANNOTATIONS_DIR",
    "ANNOTATOR_RE",
    "BUILTIN_TAXONOMIES",
    "STRATEGIES",
    "AgreementPanel",
    "Annotation",
    "AnnotationStore",
    "LabelSet",
    "PairAgreement",
    "agreement_panel",
    "check_annotator",
    "human_labels",
    "label_set",
    "sample_order",
    "validate_annotation",
]

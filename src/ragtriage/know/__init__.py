"""Know your data (seed 001, Know Your RAG): question-type labels, label composition,
label-aware retrieval tuning and balanced synthetic test sets."""

from ragtriage.know._agree import AnnotatorKappa, LabelAgreement, label_agreement, read_label_column
from ragtriage.know._compose import (
    DOMINANT_SHARE,
    RARE_SHARE,
    Composition,
    composition,
    composition_csv,
    composition_html,
    composition_rows,
    write_label_outputs,
)
from ragtriage.know._io import ledger_line, load_data, open_runner
from ragtriage.know._llm import LLMLabeller, label_prompt, parse_label_reply
from ragtriage.know._rules import RulesLabeller, rules_label
from ragtriage.know._taxonomy import (
    ANSWERABLE_LABELS,
    LABELS,
    UNDETERMINED,
    LabelDecision,
    LabelItem,
    items_of,
    parse_mix,
)

__all__ = [
    "ANSWERABLE_LABELS",
    "DOMINANT_SHARE",
    "LABELS",
    "RARE_SHARE",
    "UNDETERMINED",
    "AnnotatorKappa",
    "Composition",
    "LLMLabeller",
    "LabelAgreement",
    "LabelDecision",
    "LabelItem",
    "RulesLabeller",
    "composition",
    "composition_csv",
    "composition_html",
    "composition_rows",
    "items_of",
    "label_agreement",
    "label_prompt",
    "ledger_line",
    "load_data",
    "open_runner",
    "parse_label_reply",
    "parse_mix",
    "read_label_column",
    "rules_label",
    "write_label_outputs",
]

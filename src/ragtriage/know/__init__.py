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
from ragtriage.know._tune import (
    INCLUSIVE,
    TEXT_WEIGHTS,
    ScanCell,
    ScanResult,
    best_config,
    gt_chunk_ids,
    scan_csv,
    scan_retrieval,
    scan_rows,
)

__all__ = [
    "ANSWERABLE_LABELS",
    "DOMINANT_SHARE",
    "INCLUSIVE",
    "LABELS",
    "RARE_SHARE",
    "TEXT_WEIGHTS",
    "UNDETERMINED",
    "AnnotatorKappa",
    "Composition",
    "LLMLabeller",
    "LabelAgreement",
    "LabelDecision",
    "LabelItem",
    "RulesLabeller",
    "ScanCell",
    "ScanResult",
    "best_config",
    "composition",
    "composition_csv",
    "composition_html",
    "composition_rows",
    "gt_chunk_ids",
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
    "scan_csv",
    "scan_retrieval",
    "scan_rows",
    "write_label_outputs",
]

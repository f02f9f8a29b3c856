"""Calibration: agreement of the diagnosis judge with human annotations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtriage.calibrate.agreement import (
    AgreementReport,
    AnnotatorComparison,
    Confusion,
    HumanLabel,
    KappaResult,
    agreement,
    cohen_kappa,
    fleiss_kappa,
    read_labels,
)

__all__ = [
    "AgreementReport",
    "AnnotatorComparison",
    "Confusion",
    "HumanLabel",
    "KappaResult",
    "agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "read_labels",
]

# Fault-injection calibration (``inject``, ``calibration``, ``_run``), imported lazily so
# that the agreement statistics do not pull in the pipeline and the diagnosis engine.
if TYPE_CHECKING:
    from ragtriage.calibrate._parts import PipelineParts
    from ragtriage.calibrate._run import CalibrationResult, run_calibration, write_calibration
    from ragtriage.calibrate.calibration import (
        Prediction,
        SettingReport,
        accuracy,
        class_scores,
        confusion_matrix,
        score_setting,
        top_k_accuracy,
    )
    from ragtriage.calibrate.inject import (
        INJECTORS,
        LLM_INJECTORS,
        BaseSummary,
        InjectedCase,
        Injector,
        InjectorCounts,
        LLMRewriter,
        build_bases,
        inject,
        strip_label,
    )

_LAZY = {
    **dict.fromkeys(
        (
            "INJECTORS",
            "LLM_INJECTORS",
            "BaseSummary",
            "InjectedCase",
            "Injector",
            "InjectorCounts",
            "LLMRewriter",
            "build_bases",
            "inject",
            "strip_label",
        ),
        "inject",
    ),
    **dict.fromkeys(
        (
            "Prediction",
            "SettingReport",
            "accuracy",
            "class_scores",
            "confusion_matrix",
            "score_setting",
            "top_k_accuracy",
        ),
        "calibration",
    ),
    **dict.fromkeys(("CalibrationResult", "run_calibration", "write_calibration"), "_run"),
    "PipelineParts": "_parts",
}
__all__ += [
    "INJECTORS",
    "LLM_INJECTORS",
    "BaseSummary",
    "CalibrationResult",
    "InjectedCase",
    "Injector",
    "InjectorCounts",
    "LLMRewriter",
    "PipelineParts",
    "Prediction",
    "SettingReport",
    "accuracy",
    "build_bases",
    "class_scores",
    "confusion_matrix",
    "inject",
    "run_calibration",
    "score_setting",
    "strip_label",
    "top_k_accuracy",
    "write_calibration",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragtriage.calibrate' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"ragtriage.calibrate.{module}"), name)

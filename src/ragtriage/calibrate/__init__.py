"""Calibration: agreement of the diagnosis judge with human annotations."""

from __future__ import annotations

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

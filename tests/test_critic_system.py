"""The packaged RAG-Critic error system and its RAGEC mapping (seed 004 §3.1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ragtriage.critic import (
    RAGEC_TO_TIERS,
    UNMAPPED_TIER2,
    error_system,
    ragec_of_tier1,
    ragec_of_tier2,
    tiers_of_ragec,
)
from ragtriage.records import Diagnosis, ErrorType

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "rag_critic_error_system.json"


def test_package_data_matches_the_published_file() -> None:
    if not SHARED.exists():
        pytest.skip("shared data not present")
    published = json.loads(SHARED.read_text(encoding="utf-8"))
    system = error_system()
    assert len(system.tier1) == len({r["tag1"] for r in published}) == 7
    assert system.tier2_names == tuple(r["tag2"] for r in sorted(published, key=lambda r: r["idx"]))
    for rec in published:
        assert system.tier1_of(rec["tag2"]) == rec["tag1"]
    folded = {t.casefold() for r in published for t in r["tag3"]}
    assert {t.casefold() for t in system.tier3_tags} == folded


def test_build_script_regenerates_the_package_data(tmp_path: Path) -> None:
    if not SHARED.exists():
        pytest.skip("shared data not present")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_critic_error_system as build
    finally:
        sys.path.pop(0)
    out = tmp_path / "es.json"
    assert build.main([str(SHARED), "--out", str(out)]) == 0
    packaged = ROOT / "src" / "ragtriage" / "critic" / "error_system.json"
    assert out.read_text(encoding="utf-8") == packaged.read_text(encoding="utf-8")


def test_mapping_uses_only_names_of_the_system_and_covers_both_directions() -> None:
    system = error_system()
    assert set(RAGEC_TO_TIERS) == set(ErrorType)
    for pairs in RAGEC_TO_TIERS.values():
        for t1, t2 in pairs:
            assert system.tier1_of(t2) == t1
    mapped = {t2 for pairs in RAGEC_TO_TIERS.values() for _, t2 in pairs}
    assert mapped | set(UNMAPPED_TIER2) == set(system.tier2_names)
    assert not mapped & set(UNMAPPED_TIER2)
    # many-to-many: a RAGEC type has several tier-2 types and a tier-2 type several E's
    assert len(tiers_of_ragec(ErrorType.E12)[1]) > 1
    assert len(ragec_of_tier2("Factual Inaccuracies")) > 1
    assert ErrorType.E10 in ragec_of_tier1("Inaccurate Response")
    assert ragec_of_tier2("Erroneous Information Retrieval") == []


def test_diagnosis_reads_old_lines_and_carries_tiers() -> None:
    old = {
        "example_id": "q1",
        "trace_id": "t1",
        "judge": "rules",
        "strategy": "ragec",
        "answer_label": "incorrect",
        "needs_diagnosis": True,
    }
    d = Diagnosis.model_validate(old)
    assert d.tier1 == [] and d.tier2 == [] and d.tier3 == []
    t1, t2 = tiers_of_ragec("E16")
    d2 = Diagnosis.model_validate({**old, "tier1": t1, "tier2": t2})
    assert json.loads(d2.to_json())["tier2"] == [
        "Specificity and Precision Errors",
        "Factual Inaccuracies",
    ]


def test_every_ragec_type_has_a_published_tier3_tag_that_is_no_ragec_name() -> None:
    from ragtriage.critic import RAGEC_TIER3
    from ragtriage.records import ERROR_TYPE_NAMES

    system = error_system()
    by_name = {t.name: t for t in system.tier2}
    ragec_names = {n.casefold() for n in ERROR_TYPE_NAMES.values()}
    assert set(RAGEC_TIER3) == set(ErrorType)
    for error_type, (tag, tier2) in RAGEC_TIER3.items():
        assert tag in by_name[tier2].tier3, error_type
        assert tag.casefold() not in ragec_names, error_type

"""RAG-Error-bench scoring (seed 004 §3.4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_server import LocalLLMServer, last_user
from ragtriage.cli import main
from ragtriage.critic import (
    BenchPrediction,
    published_tag_labels,
    read_bench,
    read_published_critic_samples,
    score_bench,
)
from ragtriage.errors import InputError

FI = "Factual Inaccuracies"
LS = "Lack of Specificity"


def _row(i: int, judgement: str, tag2: list[str], critic: dict[str, object]) -> dict[str, object]:
    tag1 = ["Inaccurate Response" if t == FI else "Incomplete Response" for t in tag2]
    return {
        "id": f"s{i}",
        "question": "q",
        "passages": ["p"],
        "prediction": "a",
        "judgement": judgement,
        "tag1": tag1,
        "tag2": tag2,
        "critic": critic,
    }


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [
    _row(1, "Correct", [], {"judgement": "Correct"}),
    _row(2, "Correct", [], {"judgement": "Error", "tag2": [FI]}),
    _row(3, "Error", [FI], {"judgement": "Error", "tag1": ["Inaccurate Response"], "tag2": [FI]}),
    _row(4, "Error", [LS], {"judgement": "Error", "tag2": [FI, "Made-up Label"]}),
    _row(5, "Error", [FI], {"judgement": "maybe"}),
    {**_row(6, "Error", ["not a label"], {"judgement": "Error"}), "tag1": ["nor this"]},
]


def test_scores_by_hand(tmp_path: Path) -> None:
    samples = read_bench(_write(tmp_path / "b.jsonl", ROWS))
    preds = [s.critic or BenchPrediction() for s in samples]
    score = score_bench(samples, preds)
    assert (score.n, score.n_correct, score.n_error, score.undetermined) == (6, 2, 4, 1)
    assert score.accuracy_correct == pytest.approx(0.5)
    assert score.accuracy_error == pytest.approx(3 / 4)
    assert score.accuracy_average == pytest.approx(0.625)
    # s6 has no valid gold tag: left out; s5 undetermined predicts nothing
    assert score.tagged_errors == 3
    t2 = {r.label: r for r in score.tier2}
    # FI: gold s3,s5; predicted s3,s4 -> tp 1, fp 1, fn 1 -> F1 0.5; LS: tp 0 fn 1 -> 0
    assert t2[FI].f1 == pytest.approx(0.5) and t2[LS].f1 == pytest.approx(0.0)
    assert score.tier2_macro_f1 == pytest.approx(0.25)
    assert score.invalid_predicted_tags == 1


def test_bad_judgement_names_file_line_field(tmp_path: Path) -> None:
    path = _write(tmp_path / "b.jsonl", [ROWS[0], {**ROWS[1], "judgement": "dunno"}])
    with pytest.raises(InputError) as info:
        read_bench(path)
    assert info.value.line == 2 and info.value.field == "judgement"


def test_published_samples_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = {
        "meta_data": {
            "question": "where was the movie filmed",
            "golden_answers": ["Chicago"],
            "retrieval_docs": [{"id": "1", "contents": "The film was shot in Chicago."}],
        },
        "prediction": "So the final answer is: Chicago.",
        "output": "None",
    }
    wrong = {**sample, "prediction": "So the final answer is: Paris.", "output": "It is wrong."}
    path = _write(tmp_path / "critic_x.jsonl", [sample, wrong])
    rows = read_published_critic_samples(path)
    assert [r.judgement for r in rows] == ["Correct", "Error"]
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "critic-bench",
                str(path),
                "--format",
                "rag-critic",
                "--critic",
                "rules",
                "--reference",
                "--json",
                str(tmp_path / "s.json"),
            ]
        )
    assert exc.value.code in (0, None)
    score = json.loads((tmp_path / "s.json").read_text())
    assert score["accuracy_average"] == pytest.approx(1.0)
    assert "error identification accuracy" in capsys.readouterr().out


def test_llm_critic_on_the_bench_over_http(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def reply(body: dict[str, object], index: int) -> str:
        if "Prediction:** wrong" in last_user(body):
            return '{"Judgement": "Error", "tag1": ["Inaccurate Response"], "tag2": ["Factual Inaccuracies"]}'
        return "unreadable"  # undetermined -> counted wrong

    llm_server.behaviour.reply = reply  # type: ignore[assignment]
    rows = [
        {**_row(1, "Error", [FI], {}), "prediction": "wrong"},
        _row(2, "Correct", [], {}),
    ]
    path = _write(tmp_path / "b.jsonl", rows)
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "critic-bench",
                str(path),
                "--critic",
                "llm",
                "--base-url",
                llm_server.base_url,
                "--model",
                "m",
                "--cache",
                str(tmp_path / "c.sqlite"),
                "--json",
                str(tmp_path / "s.json"),
            ]
        )
    assert exc.value.code in (0, None)
    score = json.loads((tmp_path / "s.json").read_text())
    assert score["accuracy_error"] == 1.0 and score["accuracy_correct"] == 0.0
    assert score["undetermined"] == 1 and score["tier2_macro_f1"] == 1.0


def test_published_error_tags_label_the_error_samples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [{"id": "1", "contents": "Acme Corp was founded in 1999 in Springfield."}]
    meta = {"question": "when was acme corp founded", "golden_answers": ["1999"]}
    right = {"meta_data": {**meta, "retrieval_docs": docs}, "prediction": "1999", "output": "None"}
    wrong = {**right, "prediction": "Springfield", "output": "It names a place, not a year."}
    critic = _write(tmp_path / "critic_x.jsonl", [right, wrong])
    # open-set tags (Prompt C): one is a published tier-3 tag verbatim, one is not
    tags = [
        {"tag": "answer type MISMATCH", "explanation": "a place for a date"},
        {"tag": "Invented Tag Nobody Published", "explanation": "-"},
    ]
    error_tags = _write(
        tmp_path / "error_type_x.jsonl",
        [{"meta_data": meta, "prediction": "Springfield", "Error_type": tags}],
    )
    labels = published_tag_labels(error_tags)
    assert labels[(meta["question"], "Springfield")] == (
        ["Incomplete Response"],
        ["Specificity and Precision Errors"],
    )
    rows = read_published_critic_samples(critic, error_tags=error_tags)
    assert [r.tag2 for r in rows] == [[], ["Specificity and Precision Errors"]]
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "critic-bench",
                str(critic),
                "--format",
                "rag-critic",
                "--critic",
                "rules",
                "--error-tags",
                str(error_tags),
                "--json",
                str(tmp_path / "s.json"),
            ]
        )
    assert exc.value.code in (0, None)
    score = json.loads((tmp_path / "s.json").read_text())
    # reference-free: "Springfield" is no date (answer type mismatch) -> the same tier-2
    assert score["accuracy_average"] == pytest.approx(1.0)
    assert score["tagged_errors"] == 1 and score["tier2_macro_f1"] == pytest.approx(1.0)
    bad = _write(tmp_path / "bad.jsonl", [{"meta_data": meta, "Error_type": "oops"}])
    with pytest.raises(InputError) as info:
        published_tag_labels(bad)
    assert info.value.line == 1 and info.value.field == "Error_type"


SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "rag_critic_samples"


def test_reference_free_critic_on_the_published_samples() -> None:
    """The 10 published NQ samples, reference-free (docs/critic.md has the figures)."""
    critic_file = SAMPLES / "critic_qwen-2.5-7b-instruct_nq_train.jsonl"
    if not critic_file.is_file():
        pytest.skip("the published RAG-Critic samples are not checked out next to the repo")
    samples = read_published_critic_samples(
        critic_file, error_tags=SAMPLES / "error_type_qwen-2.5-7b-instruct_nq_train.jsonl"
    )
    import asyncio

    from ragtriage.critic import ReferenceFreeCritic

    verdicts = asyncio.run(
        ReferenceFreeCritic().judge([s.critic_input(reference=False) for s in samples])
    )
    score = score_bench(samples, verdicts)
    assert (score.n_correct, score.n_error, score.undetermined) == (8, 2, 0)
    # every correct prediction is called correct; both errors are found: the hedged
    # release date, and the wrong opponent (Ohio State, Alabama's semi-final opponent,
    # for the national championship's Clemson) by the other-qualifier check
    assert score.accuracy_correct == pytest.approx(1.0)
    assert score.accuracy_error == pytest.approx(1.0)
    opponent = next(v for s, v in zip(samples, verdicts, strict=True) if "alabama" in s.question)
    assert opponent.tier3 == ["Context-Question Mismatch"]
    assert "Ohio State" in opponent.analysis and "semi-final" in opponent.analysis
    assert score.tagged_errors == 2

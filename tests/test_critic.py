"""The RAG-Critic critic (seed 004 §3.2): rules, reference-free, LLM over HTTP, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diag_helpers import make_trace
from llm_server import LocalLLMServer, last_user
from ragtriage.cli import main
from ragtriage.config import LLMConfig
from ragtriage.critic import (
    FINDING_TAGS,
    CriticInput,
    CriticVerdict,
    LLMCritic,
    ReferenceFreeCritic,
    critic_agreement,
    critique_traces,
    error_system,
    parse_critic_reply,
    question_asks,
    snap_tags,
)
from ragtriage.jsonl import write_jsonl
from ragtriage.llm import LLMRunner
from ragtriage.records import ERROR_TYPE_NAMES, ErrorType

INP = CriticInput(
    example_id="q1",
    question="When was Acme Corp founded?",
    passages=["Acme Corp was founded in 1999 in Springfield."],
    prediction="Acme Corp was founded in 2005.",
)


def test_snap_tags_to_the_error_system() -> None:
    assert snap_tags(["factual inaccuracy"], ["Factual Inaccuracies", "Lack of Specificity"]) == [
        "Factual Inaccuracies"
    ]
    assert snap_tags("Lack of specificity; nonsense words here", ["Lack of Specificity"]) == [
        "Lack of Specificity"
    ]
    assert snap_tags(42, ["x"]) == []


def test_parse_reply_tolerates_format_and_snaps_tags() -> None:
    reply = (
        "Sure! ```json\n{'judgement': 'error', 'Error_analysis': 'wrong year',"
        " 'tag1': ['inaccurate response'], 'tag2': ['Factual Inaccuracy'], 'tag3': ['Wrong Year']}\n```"
    )
    v = parse_critic_reply(reply, INP)
    assert v.judgement == "error"
    assert v.tier2 == ["Factual Inaccuracies"]
    assert v.tier1 == ["Inaccurate Response"]
    assert v.tier3 == ["Wrong Year"] and v.analysis == "wrong year"
    assert "E10" in v.ragec_types
    assert parse_critic_reply('{"Judgement": "Correct"}', INP).judgement == "correct"


def test_garbage_replies_are_undetermined_with_a_reason() -> None:
    for text in ("", "I think it is fine", '{"foo": 1}', '{"Judgement": "maybe"}', "[1, 2]"):
        v = parse_critic_reply(text, INP)
        assert v.judgement is None and v.undetermined and v.undetermined_reason


PASSAGES = [
    "Acme Corp was founded in 1999 in Springfield by Ann Lee. It sells widgets to retailers "
    "and employs 340 people.",
    "Globex Inc was founded in 2005 in Shelbyville. Globex reported revenue of USD 30 million "
    "in 2021. Acme Corp reported revenue of USD 12 million in 2021.",
]
ZH_PASSAGES = ["阿克米公司成立于1999年，由李安创办，总部位于春田市，员工340人。"]


def _judge(question: str, prediction: str, passages: list[str] = PASSAGES) -> CriticVerdict:
    inp = CriticInput(example_id="x", question=question, passages=passages, prediction=prediction)
    return ReferenceFreeCritic().judge_one(inp)


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("Who founded Acme Corp?", ["person"]),
        ("When was Acme Corp founded?", ["date"]),
        ("How many employees does Acme have?", ["count"]),
        ("How many days did the strike last?", ["duration"]),
        ("How long did the strike last?", ["duration"]),
        ("How much revenue did Acme make in 2021?", ["amount"]),
        ("What share of sales came from Asia?", ["percent"]),
        ("Where is Acme headquartered?", ["place"]),
        ("Did Acme pay a dividend in 2021?", ["yesno"]),
        ("Did Acme buy Globex before or after it went public?", ["choice"]),
        ("Which company bought Globex?", ["name"]),
        ("Why was Acme fined, and by how much?", ["reason", "amount"]),
        ("Who founded the company that bought Globex, and in what year?", ["person", "date"]),
        ("What did the scan show?", ["other"]),
        ("阿克米公司是谁创办的？", ["person"]),
        ("阿克米公司何时成立？", ["date"]),
        ("阿克米公司有多少名员工？", ["quantity"]),
        ("阿克米公司总部在哪里？", ["place"]),
        ("阿克米公司是否分红？", ["yesno"]),
        ("罢工持续了多久？", ["duration"]),
        ("阿克米公司收购了哪家公司？交易金额是多少？", ["org", "amount"]),
    ],
)
def test_question_asks_type_every_part(question: str, kinds: list[str]) -> None:
    assert [a.kind for a in question_asks(question)] == kinds


def test_grounded_but_irrelevant_answers_are_errors() -> None:
    # the user's finding: an answer copied from the passages that does not answer
    grounded_wrong = _judge("Who founded Acme Corp?", "Acme Corp sells widgets to retailers.")
    assert grounded_wrong.judgement == "error"
    assert grounded_wrong.tier3 == ["Answer Type Mismatch"]
    assert grounded_wrong.tier2 == ["Specificity and Precision Errors"]
    assert grounded_wrong.tier1 == ["Incomplete Response"]
    assert "person" in grounded_wrong.analysis
    count = _judge("How many people does Acme Corp employ?", "Acme Corp was founded in 1999.")
    assert count.judgement == "error" and count.tier3 == ["Answer Type Mismatch"]
    # the same passages answered right
    assert _judge("Who founded Acme Corp?", "Ann Lee founded Acme Corp.").judgement == "correct"
    assert _judge("How many people does Acme Corp employ?", "340.").judgement == "correct"
    assert _judge("Where was Acme Corp founded?", "Springfield").judgement == "correct"
    profile = _judge(
        "What punishment did Ann Lee receive?",
        "Acme Corp was founded in 1999 in Springfield by Ann Lee.",
    )
    assert profile.judgement == "error" and profile.tier3 == ["Misinterpretation of Question"]


def test_every_part_of_the_question_is_addressed() -> None:
    one = _judge(
        "Compare the 2021 revenue of Acme Corp and Globex Inc.",
        "Acme Corp reported revenue of USD 12 million in 2021.",
    )
    assert one.judgement == "error" and one.tier3 == ["Partial Answer"]
    assert "Globex Inc" in one.analysis
    both = _judge(
        "Compare the 2021 revenue of Acme Corp and Globex Inc.",
        "Acme Corp reported USD 12 million and Globex Inc USD 30 million in 2021.",
    )
    assert both.judgement == "correct"
    half = _judge(
        "Who founded Acme Corp, and in what year?", "Ann Lee founded Acme Corp in Springfield."
    )
    assert half.judgement == "error" and "date" in half.analysis
    # a selection between the two entities names one of them
    pick = _judge("Which was founded first, Acme Corp or Globex Inc?", "Acme Corp, in 1999.")
    assert pick.judgement == "correct"


def test_declines_against_what_the_passages_hold() -> None:
    answerable = _judge("When was Acme Corp founded?", "I don't know.")
    assert answerable.judgement == "error"
    assert answerable.tier3 == ["Failure to Extract Relevant Information"]
    assert "1999" in answerable.analysis and answerable.ragec_types == ["E9"]
    warranted = _judge("How many patents does Acme Corp hold?", "I don't know.")
    assert warranted.judgement == "correct" and "warranted" in warranted.analysis
    unretrieved = _judge("Who is the chief executive of Initech?", "I don't know.")
    assert unretrieved.judgement == "error"
    assert unretrieved.tier2 == ["Data Insufficiency in Retrieval"]
    hedged = _judge(
        "When was Acme Corp founded?",
        "The passages do not explicitly state it. However, it existed in the 2000s.",
    )
    assert hedged.judgement == "error" and hedged.tier3 == ["Lack of Definitive Answer"]
    zh = _judge("阿克米公司是哪一年成立的？", "无法确定，文中没有相关信息。", ZH_PASSAGES)
    assert zh.judgement == "error" and zh.ragec_types == ["E9"]
    zh_ok = _judge("阿克米公司有多少项专利？", "文中没有提到。", ZH_PASSAGES)
    assert zh_ok.judgement == "correct"


def test_contradicted_unsupported_and_mixed_up_answers() -> None:
    mixed = _judge("When was Acme Corp founded?", "Acme Corp was founded in 2005.")
    assert mixed.judgement == "error" and mixed.tier3 == ["Entity Misattribution"]
    assert "Globex Inc" in mixed.analysis
    money = _judge(
        "What revenue did Acme Corp report in 2021?",
        "Acme Corp reported revenue of USD 30 million.",
    )
    assert money.judgement == "error" and money.tier2 == ["Off-Topic and Redundant Responses"]
    right = _judge(
        "What revenue did Acme Corp report in 2021?", "Acme Corp reported USD 12 million."
    )
    assert right.judgement == "correct"
    negated = _judge("Where was Acme Corp founded?", "Acme Corp was not founded in Springfield.")
    assert negated.judgement == "error" and "Contradiction with Source" in negated.tier3
    made_up = _judge("Who founded Acme Corp?", "It was started by Globex in Paris.")
    assert made_up.judgement == "error" and made_up.tier3[0] == "Unsupported Claim"
    assert made_up.ragec_types[0] == "E10"
    zh_bad = _judge("阿克米公司是谁创办的？", "该公司由环球集团在巴黎创办。", ZH_PASSAGES)
    assert zh_bad.judgement == "error"
    zh_good = _judge("阿克米公司是谁创办的？", "阿克米公司由李安创办。", ZH_PASSAGES)
    assert zh_good.judgement == "correct"
    assert _judge("Who founded Acme Corp?", "").tier3 == ["Lack of Direct Answer"]


def test_entities_mixed_up_across_sentences_and_passages() -> None:
    # the answer is about another company than the question's
    drift = _judge("When was Acme Corp founded?", "Globex Inc was founded in 2005 in Shelbyville.")
    assert drift.judgement == "error" and drift.tier3 == ["Entity Misattribution"]
    assert "Globex Inc" in drift.analysis and "Acme Corp" in drift.analysis
    # a pronoun may stand for the question's entity: no mix-up claimed
    pronoun = ["Acme Corp makes widgets. It was founded in 1999 by Ann Lee."]
    ok = _judge("When was Acme Corp founded?", "Acme Corp was founded in 1999.", pronoun)
    assert ok.judgement == "correct"
    # a question that asks for a name: the new name is the answer, not a drift
    who = _judge("Who founded Acme Corp?", "Ann Lee founded the company in Springfield.")
    assert who.judgement == "correct"


def test_answers_cut_mid_sentence() -> None:
    q = "When was Acme Corp founded?"
    cut = _judge(q, "Acme Corp was founded in 1999 in [1] Globex Inc was founded in 2005.")
    assert cut.judgement == "error" and "Partial Response" in cut.tier3
    # a passage that goes on with the sentence after the marker is no cut
    joined = _judge(q, "Acme Corp was founded in [1] 1999 in Springfield by Ann Lee. [2]")
    assert joined.judgement == "correct"
    piece = _judge(q, "Acme Corp was founded in 1999 [1] It sells widgets to retailers. [1]")
    assert piece.judgement == "error"  # "… in 1999" may have gone on: "in Springfield"
    listed = _judge(q, "- Acme Corp was founded in 1999 [1]\n- It sells widgets to retailers [1]")
    assert listed.judgement == "correct"  # list items end without a full stop
    cited = _judge(q, "Acme Corp was founded in 1999 [1]. It sells widgets [1].")
    assert cited.judgement == "correct"
    zh = _judge("阿克米公司何时成立？", "阿克米公司成立于1999年，由李安创办， [1]", ZH_PASSAGES)
    assert zh.judgement == "error" and "Partial Response" in zh.tier3


BANK_PASSAGES = [
    "Norvale Bank was founded in Leeds in 1987. Martin Hale was appointed chairman of "
    "Norvale Bank in 1998.",
    "In 1990 Norvale Bank named Ruth Ember its first chief executive. She left in 1996.",
]


def test_answers_supported_for_another_role_than_the_one_asked() -> None:
    q = "Who was the first chief executive of Norvale Bank?"
    # the answer's only sentence ties it to the bank as chairman; the sentence that has
    # "first chief executive" gives another person
    other = _judge(q, "Martin Hale.", BANK_PASSAGES)
    assert other.judgement == "error" and other.tier3 == ["Context-Question Mismatch"]
    assert other.tier2 == ["Specificity and Precision Errors"]
    assert "chairman" in other.analysis and "Ruth Ember" in other.analysis
    # the same in a question written in lower case (names found by the passages' capitals)
    lower = _judge(
        "who did norvale bank name as its first chief executive", "Martin Hale", BANK_PASSAGES
    )
    assert lower.judgement == "error" and lower.tier3 == ["Context-Question Mismatch"]
    # the right answer, and a long answer that adds a true detail about the other person
    assert _judge(q, "Ruth Ember.", BANK_PASSAGES).judgement == "correct"
    longer = "Ruth Ember was Norvale Bank's first chief executive; Martin Hale later chaired it."
    assert _judge(q, longer, BANK_PASSAGES).judgement == "correct"
    # a paraphrase of the qualifier in the answer's own sentence ("CEO"), next to a
    # successor named with the question's words: not flagged
    successor = [
        "Ruth Ember became Norvale Bank's first CEO in 1990.",
        "Tom Reed succeeded her as chief executive of Norvale Bank in 1996.",
    ]
    assert _judge(q, "Ruth Ember.", successor).judgement == "correct"
    # one qualifier worded otherwise ("official arrest" for "formally arrested") is no mismatch
    arrest = [
        "An official arrest of Dan Wirth was made on 16 April 2023.",
        "Dan Wirth was placed in criminal detention on 10 March 2023 and formally questioned.",
    ]
    assert _judge("When was Dan Wirth formally arrested?", "16 April 2023.", arrest).judgement == (
        "correct"
    )
    # the answer's sentence says "the company": a missing name is not a qualifier
    company = [
        "Acme Corp was founded in 1999 and raised USD 5 million in 2001.",
        "In March 2017, the company invested USD 50 million in Project Atlas.",
    ]
    invest = _judge("How much did Acme Corp invest in Project Atlas?", "USD 50 million.", company)
    assert invest.judgement == "correct"


def test_the_subject_carries_to_the_next_sentence_of_its_passage() -> None:
    # "The company …" after a sentence naming Acme Corp is about Acme Corp
    listed = [
        "Acme Corp was listed on the stock exchange in 2004. The company completed its "
        "first acquisition, Brightline, in 2006."
    ]
    q = "When did Acme Corp complete its first acquisition?"
    other = _judge(q, "In 2004.", listed)
    assert other.judgement == "error" and other.tier3 == ["Context-Question Mismatch"]
    assert "'2006'" in other.analysis and "listed" in other.analysis
    assert _judge(q, "In 2006.", listed).judgement == "correct"
    both = "Acme Corp completed its first acquisition in 2006, two years after its 2004 listing."
    assert _judge(q, both, listed).judgement == "correct"


def test_zh_answers_supported_for_another_role() -> None:
    passages = [
        "华星公司成立于2003年。李强是华星公司的技术总监，负责研发工作。",
        "华星公司由张伟创办，张伟是公司的创始人。",
    ]
    q = "华星公司的创始人是谁？"
    other = _judge(q, "李强。", passages)
    assert other.judgement == "error" and other.tier3 == ["Context-Question Mismatch"]
    assert "技术总监" in other.analysis and "张伟" in other.analysis
    assert _judge(q, "张伟。", passages).judgement == "correct"
    assert _judge(q, "华星公司的创始人是张伟，李强是技术总监。", passages).judgement == "correct"


def test_tier3_tags_are_published_tags_of_their_tier2_never_ragec_names() -> None:
    system = error_system()
    by_name = {t.name: t for t in system.tier2}
    ragec = {n.casefold() for n in ERROR_TYPE_NAMES.values()}
    for kind, (tag3, tier2, types) in FINDING_TAGS.items():
        assert tier2 in by_name, kind
        assert tag3 in by_name[tier2].tier3, (kind, tag3)
        assert tag3.casefold() not in ragec
        assert all(t in {e.value for e in ErrorType} for t in types)
    verdicts = [
        _judge("Who founded Acme Corp?", "Acme Corp sells widgets to retailers."),
        _judge("When was Acme Corp founded?", "I don't know."),
        _judge("When was Acme Corp founded?", "Acme Corp was founded in 2005."),
        _judge("Who is the chief executive of Initech?", "I don't know."),
    ]
    for v in verdicts:
        assert v.tier3 and len(v.tier1) <= len(v.tier2) <= len(v.tier3)
        for t1, t2, t3 in zip(v.tier1, v.tier2, v.tier3, strict=False):
            assert t3 in by_name[t2].tier3 and system.tier1_of(t2) in v.tier1
            assert t1 in system.tier1


def test_the_bundled_tier3_tags_are_the_published_ones() -> None:
    source = (
        Path(__file__).resolve().parents[2] / "shared" / "data" / "rag_critic_error_system.json"
    )
    if not source.is_file():
        pytest.skip("the published error system is not checked out next to the repo")
    published = {
        r["tag2"]: {" ".join(str(t).split()).casefold() for t in r["tag3"]}
        for r in json.loads(source.read_text(encoding="utf-8"))
    }
    for tag3, tier2, _ in FINDING_TAGS.values():
        assert tag3.casefold() in published[tier2]


async def test_agreement_with_gold_answer_diagnoses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragtriage.diagnosis.engine import Diagnoser

    wrong = make_trace()  # "2005", the distractor's year
    right = make_trace(example_id="q2", answer="Acme Corp was founded in 1999.", context=["gd_0"])
    diagnoses = await Diagnoser("rules", "ragec").diagnose_many([wrong, right], 1)
    verdicts = await critique_traces([wrong, right], critic="rules", reference=False)
    assert [v.judgement for v in verdicts] == ["error", "correct"]
    agreement = critic_agreement(verdicts, diagnoses)
    assert (agreement.n, agreement.agree, agreement.false_correct) == (2, 2, 0)
    fooled = [verdicts[0].model_copy(update={"judgement": "correct"}), verdicts[1]]
    assert critic_agreement(fooled, diagnoses).false_correct == 1
    # the CLI prints it for a run with gold-answer diagnoses
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(run / "traces.jsonl", [wrong, right])
    write_jsonl(run / "diagnoses.jsonl", diagnoses)
    with pytest.raises(SystemExit) as exc:
        main(["critic", str(run)])
    assert exc.value.code in (0, None)
    assert "agree on 2 of 2; 0 called correct that" in " ".join(capsys.readouterr().out.split())


async def test_rules_critic_with_reference_maps_the_diagnosis_to_tiers() -> None:
    wrong = make_trace()
    right = make_trace(example_id="q2", answer="Acme Corp was founded in 1999.", context=["gd_0"])
    out = await critique_traces([wrong, right], critic="rules", reference=True)
    assert out[0].judgement == "error" and out[0].tier1 and out[0].tier2 and out[0].ragec_types
    # tier-3: published tags of the verdict's tier-2 types, never the RAGEC names
    system = error_system()
    listed = {tag for t in system.tier2 if t.name in out[0].tier2 for tag in t.tier3}
    assert out[0].tier3 and set(out[0].tier3) <= listed
    assert not {t.casefold() for t in out[0].tier3} & {
        n.casefold() for n in ERROR_TYPE_NAMES.values()
    }
    assert all(system.tier1_of(t2) in out[0].tier1 for t2 in out[0].tier2)
    assert out[1].judgement == "correct"
    assert all(v.reference for v in out)


async def test_llm_critic_over_http(llm_server: LocalLLMServer, tmp_path: Path) -> None:
    def reply(body: dict[str, object], index: int) -> str:
        prompt = last_user(body)
        if "2005" in prompt:
            return json.dumps(
                {
                    "Judgement": "Error",
                    "Error analysis": "The year is wrong.",
                    "tag1": ["Inaccurate Response"],
                    "tag2": ["Factual Inaccuracies"],
                    "tag3": ["Incorrect Year"],
                }
            )
        if "garbage" in prompt:
            return "no idea, sorry"
        return '{"Judgement": "Correct"}'

    llm_server.behaviour.reply = reply  # type: ignore[assignment]
    cfg = LLMConfig(base_url=llm_server.base_url, model="critic", max_retries=0)
    runner = LLMRunner.from_config(cfg, cache_path=tmp_path / "c.sqlite")
    try:
        critic = LLMCritic(runner, model="critic")
        good = INP.model_copy(update={"example_id": "q2", "prediction": "In 1999."})
        bad = INP.model_copy(update={"example_id": "q3", "prediction": "garbage"})
        out = await critic.judge([INP, good, bad])
    finally:
        await runner.aclose()
        runner.close()
    assert [v.judgement for v in out] == ["error", "correct", None]
    assert out[0].tier2 == ["Factual Inaccuracies"] and out[0].tier3 == ["Incorrect Year"]
    assert out[2].undetermined_reason
    body = llm_server.bodies[0]
    assert "Factual Inaccuracies" in last_user(body)  # the tier lists of Prompt E


def test_cli_critic_both_modes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(run / "traces.jsonl", [make_trace(), make_trace(example_id="q2", answer="")])
    try:
        main(["critic", str(run)])
    except SystemExit as exc:
        assert exc.code in (0, None)
    rows = [json.loads(x) for x in (run / "critic.jsonl").read_text().splitlines()]
    assert [r["reference"] for r in rows] == [False, False]
    assert rows[1]["judgement"] == "error"  # the empty answer
    try:
        main(["critic", str(run), "--reference", "--out", str(tmp_path / "ref")])
    except SystemExit as exc:
        assert exc.code in (0, None)
    rows = [json.loads(x) for x in (tmp_path / "ref" / "critic.jsonl").read_text().splitlines()]
    assert rows[0]["judgement"] == "error" and rows[0]["reference"] is True


def test_cli_llm_critic_dry_run_writes_nothing(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(
        run / "traces.jsonl", [make_trace(), make_trace(example_id="q2", answer="In 1887.")]
    )
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "critic",
                str(run),
                "--critic",
                "llm",
                "--base-url",
                llm_server.base_url,
                "--model",
                "m",
                "--cache",
                str(tmp_path / "c.sqlite"),
                "--dry-run",
            ]
        )
    assert exc.value.code in (0, None)
    assert "dry run: about 2 LLM calls" in capsys.readouterr().out
    assert llm_server.chat_requests == 0 and not (run / "critic.jsonl").exists()

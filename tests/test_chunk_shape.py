"""The chunking extension of the stage cascade (over-/underchunking by chunk shape)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis import Diagnoser
from ragtriage.diagnosis.cascade import classify_stage
from ragtriage.diagnosis.stage import chunk_shape_findings
from ragtriage.records import Chunk, Example, Hit, Stage, Trace

CFG = DiagnosisConfig()


def _chunks(doc_id: str, pieces: Sequence[str]) -> list[Chunk]:
    out, pos = [], 0
    for i, text in enumerate(pieces):
        out.append(
            Chunk(
                chunk_id=f"{doc_id}#{i}",
                doc_id=doc_id,
                text=text,
                start=pos,
                end=pos + len(text),
                index=i,
            )
        )
        pos += len(text) + 1
    return out


def _trace(chunks: list[Chunk], retrieved: Sequence[str], reference: str) -> Trace:
    other = Chunk(chunk_id="o#0", doc_id="o", text="Unrelated text.", start=0, end=15, index=0)
    ids = [*retrieved, "o#0"]
    hits = [
        Hit(chunk_id=i, doc_id=i.split("#")[0], score=1.0, rank=r + 1) for r, i in enumerate(ids)
    ]
    return Trace(
        trace_id="t",
        example=Example(
            example_id="e",
            query="Why did the harbour authority close the northern pier?",
            answer="Storm damage.",
            doc_ids=["d"],
            references=[reference],
        ),
        gt_doc_chunks=chunks,
        chunks=[other],
        retrieved=hits,
        reranked=hits,
        context=ids,
        answer="It was closed for repainting.",
    )


REF = (
    "The harbour authority closed the northern pier in March because the winter "
    "storms had cracked two of its concrete supports."
)


def test_a_reference_cut_into_fragments_partly_unretrieved_is_overchunking() -> None:
    pieces = [
        "Port news.",
        "The harbour authority closed",
        "the northern pier in March",
        "because the winter storms had",
        "cracked two of its concrete supports.",
        "Ferries now use the south quay.",
    ]
    chunks = _chunks("d", pieces)
    trace = _trace(chunks, ["d#1", "d#2"], REF)
    gt = ["d#1", "d#2", "d#3", "d#4"]
    found = chunk_shape_findings(trace, gt, CFG)
    assert [f.kind for f in found] == ["over"]
    assert "2 of them were not retrieved" in found[0].note
    # it decides the stage before the coverage test, even with full concept coverage
    call = classify_stage(trace, gt, 1.0, 3, CFG)
    assert call.stage is Stage.CHUNKING
    assert "extension" in call.reason
    # and the flag turns it off: back to the paper's coverage test
    off = DiagnosisConfig(chunking_extension=False)
    assert chunk_shape_findings(trace, gt, off) == []
    assert classify_stage(trace, gt, 1.0, 3, off).stage is Stage.RETRIEVAL


def test_an_ordinary_boundary_with_both_halves_retrieved_is_no_error() -> None:
    filler = "Cargo volumes grew again this quarter and new cranes arrived. " * 8
    pieces = [
        filler + "The harbour authority closed the northern pier in March because",
        " the winter storms had cracked two of its concrete supports. " + filler,
    ]
    chunks = _chunks("d", pieces)
    trace = _trace(chunks, ["d#0", "d#1"], REF)
    assert chunk_shape_findings(trace, ["d#0", "d#1"], CFG) == []


def test_a_boundary_that_parts_a_reference_from_its_subject_is_overchunking() -> None:
    # the chunks are much longer than the reference, but the boundary cuts it in two: the
    # half naming the pier was retrieved, the half with the cause was not
    filler = "Cargo volumes grew again this quarter and new cranes arrived. " * 8
    pieces = [
        filler + "The harbour authority closed the northern pier in March because",
        " the winter storms had cracked two of its concrete supports. " + filler,
        filler,
    ]
    chunks = _chunks("d", pieces)
    trace = _trace(chunks, ["d#0"], REF)
    found = chunk_shape_findings(trace, ["d#0", "d#1"], CFG)
    assert [f.kind for f in found] == ["over"], found
    assert found[0].chunk_ids == ("d#0", "d#1")
    assert classify_stage(trace, ["d#0", "d#1"], 1.0, 3, CFG).stage is Stage.CHUNKING
    # the piece retrieved names less of the question than the piece lost: the retriever
    # missed what the question asks about, the boundary is not to blame
    trace = _trace(chunks, ["d#1"], REF)
    assert chunk_shape_findings(trace, ["d#0", "d#1"], CFG) == []
    # a reference that one chunk holds whole is no finding, retrieved or not
    whole = [
        filler,
        "The harbour authority closed the northern pier in March because the "
        "winter storms had cracked two of its concrete supports.",
        filler,
    ]
    trace = _trace(_chunks("d", whole), ["d#0"], REF)
    assert chunk_shape_findings(trace, ["d#1"], CFG) == []


def _doc(sizes: Sequence[int]) -> list[str]:
    return [" ".join(["pier"] * n) + "." for n in sizes]


def test_an_unretrieved_oversized_chunk_is_underchunking() -> None:
    pieces = _doc([40, 40, 40, 40])
    pieces.insert(2, " ".join(["quay"] * 200) + " " + REF)
    chunks = _chunks("d", pieces)
    trace = _trace(chunks, ["d#0"], "not located anywhere")
    found = chunk_shape_findings(trace, ["d#2"], CFG)
    assert [f.kind for f in found] == ["under"]
    assert found[0].chunk_ids == ("d#2",)
    # retrieved after all: the size did not stop the retriever, no finding
    trace = _trace(chunks, ["d#2"], "not located anywhere")
    assert chunk_shape_findings(trace, ["d#2"], CFG) == []


def test_uniform_chunk_sizes_never_fire_underchunking() -> None:
    chunks = _chunks("d", _doc([150, 150, 150, 150, 150]))
    trace = _trace(chunks, ["d#0"], "not located anywhere")
    assert chunk_shape_findings(trace, ["d#2", "d#3"], CFG) == []


def test_a_chinese_reference_split_into_tiny_chunks() -> None:
    pieces = [
        "公告。",
        "临江港务局于三月",
        "关闭北码头，原因是",
        "冬季风暴损坏了两根",
        "混凝土支柱。",
        "渡轮改靠南码头。",
    ]
    chunks = _chunks("d", pieces)
    ref = "临江港务局于三月关闭北码头，原因是冬季风暴损坏了两根混凝土支柱。"
    text = "\n".join(pieces)
    assert ref not in text  # the pieces are joined by line breaks: located loosely
    trace = _trace(chunks, ["d#1"], ref)
    found = chunk_shape_findings(trace, ["d#1", "d#2", "d#3", "d#4"], CFG)
    assert [f.kind for f in found] == ["over"]


def _reranked_trace(
    chunks: list[Chunk], retrieved: Sequence[str], kept: Sequence[str], query: str, ref: str
) -> Trace:
    hits = [
        Hit(chunk_id=i, doc_id=i.split("#")[0], score=1.0, rank=r + 1)
        for r, i in enumerate(retrieved)
    ]
    return Trace(
        trace_id="t",
        example=Example(example_id="e", query=query, answer="x", doc_ids=["d"], references=[ref]),
        gt_doc_chunks=chunks,
        retrieved=hits,
        reranked=[h for h in hits if h.chunk_id in kept],
        context=list(kept),
        answer="It does not say.",
    )


def test_a_split_reference_whose_lost_piece_the_reranker_dropped_is_chunking_en_and_zh() -> None:
    en = _chunks(
        "d",
        [
            "Port news.",
            "The harbour authority closed the northern pier in March because the winter",
            "storms had cracked two of its concrete supports.",
            "Ferries now use the south quay.",
        ],
    )
    zh = _chunks(
        "d",
        [
            "港口新闻。",
            "1952年，满山岛划归三门县管辖，并成为三门",
            "县、象山县和宁海县的海上界岛。",
            "渡轮改停南码头。",
        ],
    )
    cases = [
        (en, "Why did the harbour authority close the northern pier?", REF),
        (
            zh,
            "1952年满山岛成为了什么？",
            "1952年，满山岛划归三门县管辖，并成为三门县、象山县和宁海县的海上界岛。",
        ),
    ]
    for chunks, query, ref in cases:
        # the piece without its subject was retrieved at rank 3 and cut by the reranker
        trace = _reranked_trace(chunks, ["d#1", "d#0", "d#2", "d#3"], ["d#1", "d#0"], query, ref)
        gt = ["d#1", "d#2"]
        found = chunk_shape_findings(trace, gt, CFG)
        assert [f.kind for f in found] == ["over"], query
        assert "never reached the generator" in found[0].note
        call = classify_stage(trace, gt, 1.0, 3, CFG)
        assert call.stage is Stage.CHUNKING, call.reason
        assert "only part of it reached the generator" in call.reason
        # the diagnoser's cascade applies the same rule (stage.before_split_reference)
        d = asyncio.run(Diagnoser("rules").diagnose(trace))
        assert d.stage is Stage.CHUNKING and d.stage_reason == call.reason
        # both pieces delivered: no chunking fault, the generator had the reference
        whole = _reranked_trace(chunks, ["d#1", "d#2", "d#0"], ["d#1", "d#2"], query, ref)
        assert chunk_shape_findings(whole, gt, CFG) == []
        # without the extension the paper's cascade blames the reranker
        off = classify_stage(trace, gt, 1.0, 3, DiagnosisConfig(chunking_extension=False))
        assert off.stage is Stage.RERANKING

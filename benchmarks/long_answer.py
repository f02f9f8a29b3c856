"""Seconds per rules diagnosis as the answer grows from 1 KB to 1 MB.

Run: .venv/bin/python benchmarks/long_answer.py [--sizes 1000,4000,16000,64000,256000,1000000]
     [--shapes repeat,varied,zh] [--budget 60] [--strategy ragec]

One realistic trace (a company-report question whose ground truth holds two dates, a
name and an amount; the context carries the evidence among other numbers, dates and
names), diagnosed by ``Diagnoser("rules")`` with answers of growing size in three
shapes:

* ``repeat`` -- one short wrong sentence repeated ("The answer is 42. " * n), the
  shape of a degenerate generator looping on itself;
* ``varied`` -- English prose whose sentences carry distinct numbers, dates and names
  (every fact kind the alignment checks index);
* ``zh`` -- the same in Chinese.

Prints, per shape and size, the seconds of one diagnosis (a fresh answer text each
time, so no cache helps), the answer label, stage and error type (the labels must not
depend on the speed-ups) and the time per KB. Once a size takes longer than
``--budget`` seconds the larger sizes of that shape are skipped. No assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from diag_helpers import make_trace  # noqa: E402
from ragtriage.diagnosis import Diagnoser  # noqa: E402
from ragtriage.records import Trace  # noqa: E402

_EN_GT = (
    "Acme Corp opened its Springfield plant on 3 March 2004 under chief executive "
    "Ann Lee, and it moved its headquarters to Riverton on 9 September 2011 after "
    "raising $48 million."
)
_EN_QUERY = "When did Acme Corp open its Springfield plant and move its headquarters?"
_EN_TEXTS = (
    "Acme Corp opened its Springfield plant on 3 March 2004 under chief executive Ann Lee.",
    "The plant employed 1,250 people in 2005 and 2,140 people by 2010.",
    "Acme Corp moved its headquarters to Riverton on 9 September 2011 after raising "
    "$48 million from Globex Holdings.",
    "Revenue grew 12% to $310 million in 2012; the dividend was USD 0.42 per share.",
)
_EN_OTHERS = (
    "Initech Systems was founded in 1999 in Lakeside by Peter Gibbons.",
    "Wayne Logistics paid $6.2 million for two warehouses on 12 May 2015.",
)
_ZH_GT = (
    "绿野农业公司于2004年3月3日在河源开设工厂，首席执行官为张伟，并于2011年9月9日将总部迁至临江。"
)
_ZH_QUERY = "绿野农业公司何时在河源开设工厂，何时迁移总部？"
_ZH_TEXTS = (
    "绿野农业公司于2004年3月3日在河源开设工厂，首席执行官为张伟。",
    "该工厂在2005年雇佣了1250名员工，到2010年增至2140名。",
    "公司于2011年9月9日将总部迁至临江，此前从东方物流融资4800万元。",
)
_ZH_OTHERS = (
    "华信科技成立于1999年，总部位于南湖。",
    "远航医药于2015年5月12日以620万元收购两座仓库。",
)

_FIRST = ("Ann", "Marcus", "Elena", "Tomas", "Ingrid", "Peter", "Chen", "Priya", "Omar", "Lena")
_LAST = ("Lee", "Lindqvist", "Broch", "Reiersen", "Halvorsen", "Gibbons", "Okafor", "Novak")
_CITIES = ("Springfield", "Riverton", "Lakeside", "Fairview", "Greenville", "Bayside")
_MONTHS = ("January", "March", "May", "July", "September", "November")
_ZH_NAMES = ("张伟", "李娜", "王芳", "刘洋", "陈静", "杨磊", "赵敏", "黄强")
_ZH_CITIES = ("河源", "临江", "南湖", "青山", "白沙", "新桥")


def _repeat(size: int, salt: int) -> str:
    unit = f"The answer is {42 + salt}. "
    return unit * max(1, size // len(unit))


def _fill(size: int, salt: int, sentence: Callable[[random.Random], str]) -> str:
    """Sentences from ``sentence`` until the text reaches ``size`` characters."""
    rng = random.Random(salt)
    parts: list[str] = []
    total = 0
    while total < size:
        parts.append(sentence(rng))
        total += len(parts[-1])
    return "".join(parts)


def _varied_sentence(rng: random.Random) -> str:
    name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    return (
        f"On {rng.randint(1, 28)} {rng.choice(_MONTHS)} {rng.randint(1990, 2023)}, "
        f"{name} approved ${rng.randint(2, 900)} million for the "
        f"{rng.choice(_CITIES)} plant, which employed {rng.randint(100, 9000):,} people. "
    )


def _zh_sentence(rng: random.Random) -> str:
    return (
        f"{rng.randint(1990, 2023)}年{rng.randint(1, 12)}月{rng.randint(1, 28)}日，"
        f"{rng.choice(_ZH_NAMES)}批准为{rng.choice(_ZH_CITIES)}工厂投入"
        f"{rng.randint(2, 900)}万元，该厂雇佣了{rng.randint(100, 9000)}名员工。"
    )


def _varied(size: int, salt: int) -> str:
    return _fill(size, salt, _varied_sentence)


def _zh(size: int, salt: int) -> str:
    return _fill(size, salt, _zh_sentence)


_SHAPES: dict[str, tuple[Callable[[int, int], str], bool]] = {
    "repeat": (_repeat, False),
    "varied": (_varied, False),
    "zh": (_zh, True),
}


def _trace(answer: str, zh: bool) -> Trace:
    if zh:
        return make_trace(
            query=_ZH_QUERY,
            gt_answer=_ZH_GT,
            answer=answer,
            gt_texts=_ZH_TEXTS,
            other_texts=_ZH_OTHERS,
            retrieved=["gd_0", "gd_1", "gd_2", "od_0"],
            reranked=["gd_0", "gd_2", "od_0"],
            context=["gd_0", "gd_2", "od_0"],
            language="zh",
        )
    return make_trace(
        query=_EN_QUERY,
        gt_answer=_EN_GT,
        answer=answer,
        gt_texts=_EN_TEXTS,
        other_texts=_EN_OTHERS,
        retrieved=["gd_0", "gd_1", "gd_2", "gd_3", "od_0", "od_1"],
        reranked=["gd_0", "gd_2", "gd_3", "od_1"],
        context=["gd_0", "gd_2", "gd_3", "od_1"],
        language="en",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,4000,16000,64000,256000,1000000")
    parser.add_argument("--shapes", default="repeat,varied,zh")
    parser.add_argument("--budget", type=float, default=60.0, help="skip larger sizes after")
    parser.add_argument("--strategy", default="ragec")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    diagnoser = Diagnoser("rules", args.strategy)
    asyncio.run(diagnoser.diagnose(_trace("Acme Corp opened the plant in 2005.", False)))
    print(f"{'shape':<7} {'chars':>9} {'seconds':>9} {'ms/KB':>8}  label / stage / type")
    for name in args.shapes.split(","):
        build, zh = _SHAPES[name]
        for salt, size in enumerate(sizes):
            trace = _trace(build(size, salt), zh)
            t0 = time.perf_counter()
            d = asyncio.run(diagnoser.diagnose(trace))
            secs = time.perf_counter() - t0
            n = len(trace.answer)
            label = d.answer_label.value if d.answer_label else "undetermined"
            stage = d.stage.value if d.stage else "-"
            etype = d.error_type.value if d.error_type else "-"
            print(
                f"{name:<7} {n:>9,} {secs:>9.3f} {secs * 1000 / (n / 1000):>8.2f}  "
                f"{label} / {stage} / {etype}",
                flush=True,
            )
            if secs > args.budget:
                print(f"{name:<7} larger sizes skipped (over the {args.budget:.0f}s budget)")
                break


if __name__ == "__main__":
    main()

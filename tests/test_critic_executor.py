"""The sandboxed planner executor: allow-list, budgets, 0 escapes (seed 004 §3.3)."""

from __future__ import annotations

import ast
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtriage.critic import ProgramLimits, run_program
from ragtriage.errors import ProgramRejected

CALLS: list[tuple[str, tuple[Any, ...]]] = []


def _retrieval(query: str, topk: int = 3) -> list[str]:
    CALLS.append(("Retrieval", (query, topk)))
    return [f"doc {i} about {query}" for i in range(int(topk))]


def _generate(query: str, docs: list[str], additional_instruction: str = "") -> str:
    CALLS.append(("GenerateAnswer", (query, len(docs))))
    return f"answer to {query} from {len(docs)} docs"


def _big(n: int) -> str:
    return "x" * int(n)


ACTIONS = {"Retrieval": _retrieval, "GenerateAnswer": _generate, "Big": _big}
VARS = {"query": "who wrote it", "docs": ["a", "b"], "prediction": "nobody"}


def run(src: str, **kw: Any) -> Any:
    return run_program(
        src,
        ACTIONS,
        max_steps=kw.pop("max_steps", 2000),
        timeout_s=kw.pop("timeout_s", 2.0),
        variables=VARS,
        **kw,
    )


def test_a_planner_program_runs() -> None:
    src = (
        "new_docs = Retrieval(query, topk=2)\n"
        "all_docs = docs + [d for d in new_docs if 'doc' in d]\n"
        "answer = GenerateAnswer(query, all_docs, additional_instruction='be precise')\n"
    )
    assert run(src) == "answer to who wrote it from 4 docs"
    assert run("x = {'a': [1, 2][0], 'b': docs[-1]}\nx['b']") == "b"
    assert run("[q for q in ['a', 'b']][0:1]") == ["a"]
    assert run("'yes' if prediction == 'nobody' and not docs == [] else 'no'") == "yes"


HOSTILE = [
    # imports and builtins
    "import os",
    "from os import system",
    "__import__('os').system('echo pwned')",
    "eval('1+1')",
    "exec('x=1')",
    "open('/etc/passwd').read()",
    "compile('1', 'f', 'eval')",
    "globals()",
    "locals()['x'] = 1",
    "vars()",
    "getattr(query, 'upper')()",
    "breakpoint()",
    "input()",
    "print('hi')",
    # attribute and dunder walks
    "().__class__.__bases__[0].__subclasses__()",
    "query.__class__",
    "''.__class__.__mro__[1].__subclasses__()",
    "docs.append('x')",
    "Retrieval.__globals__",
    "x = {'__class__': 1}\nx['__class__']",
    "docs['__len__']",
    "_x = 1",
    "Retrieval(query, _topk=1)",
    # definitions, lambdas, classes, loops
    "f = lambda: 1",
    "def f():\n    return f()\nf()",
    "class A:\n    pass",
    "while True:\n    pass",
    "for i in docs:\n    pass",
    "async def f():\n    pass",
    "with open('x') as f:\n    pass",
    "try:\n    x = 1\nexcept Exception:\n    pass",
    "global x",
    "del docs",
    "assert False",
    "raise SystemExit",
    "x = yield 1",
    "Retrieval = 1",
    "(x := 1)",
    "docs[0] = 'y'",
    "x = *docs,",
    "GenerateAnswer(*docs)",
    "GenerateAnswer(**{'query': 'q'})",
    # string tricks
    "f'{query.__class__}'",
    "'%s' % query",
    "'{0.__class__}'.format(query)",
    "b'bytes'",
    "1j",
    "...",
    # resource bombs
    "x = 'a' * 10**9",
    "x = [0] * 10**9",
    "2 ** 10 ** 10",
    "x = [[y for y in docs] for _ in range(10**9)]",
    "x = [1 for a in Big(1000) for b in Big(1000) for c in Big(1000)]",
    "a = Big(900000)\nb = a + a",
    "a = [1]\n" + "a = [a, a]\n" * 40 + "a",
    "a = 'xxxxxxxxxx'\n" + "a = a + a\n" * 40,
    "[" * 500 + "]" * 500,
    "[" * 60 + "1" + "]" * 60,
    "-" * 100_000 + "1",
    "x = " + "1 + " * 5000 + "1",
    "Retrieval(query)\n" * 100,
    "x = 9" * 20000,
    "Big(10**8)",
    "Retrieval(query, 10**7)",
    "Retrieval(query, 'three')",
    "x = [1, 2]\nx[5]",
    "nosuchname",
    "GenerateAnswer",
    "Nope(query)",
]


@pytest.mark.parametrize("src", HOSTILE)
def test_hostile_programs_are_rejected(src: str, tmp_path: Any) -> None:
    CALLS.clear()
    t0 = time.monotonic()
    with pytest.raises(ProgramRejected):
        run(src, max_steps=5000, timeout_s=2.0)
    assert time.monotonic() - t0 < 10.0
    # nothing from the model reached an action beyond its call budget
    assert len(CALLS) <= ProgramLimits().max_calls


def test_there_are_at_least_forty_hostile_programs() -> None:
    assert len(HOSTILE) >= 40


def test_budgets_are_reported_with_a_reason() -> None:
    with pytest.raises(ProgramRejected, match="step budget"):
        run("x = [d for d in docs for e in docs for f in docs]", max_steps=10)
    with pytest.raises(ProgramRejected, match="call budget"):
        run("Retrieval(query)\n" * 40)
    with pytest.raises(ProgramRejected, match="not allowed") as info:
        run("x = 1\nimport os")
    assert info.value.line == 2


def test_time_budget() -> None:
    def slow(q: str) -> str:
        time.sleep(0.05)
        return q

    with pytest.raises(ProgramRejected, match="time budget"):
        run_program(
            "slow(query)\n" * 10,
            {"slow": slow},
            max_steps=1000,
            timeout_s=0.12,
            variables={"query": "q"},
        )


def test_action_results_must_be_plain_data() -> None:
    with pytest.raises(ProgramRejected, match="not allowed"):
        run_program("leak()", {"leak": lambda: object()}, max_steps=10, timeout_s=1.0)


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str | int) and _plain(v) for k, v in value.items())
    return False


# -- fuzzing -------------------------------------------------------------------------

_NAMES = ["query", "docs", "x", "y", "Retrieval", "GenerateAnswer", "Big", "open", "__x", "eval"]


def _exprs() -> st.SearchStrategy[ast.expr]:
    leaves = st.one_of(
        st.sampled_from(_NAMES).map(lambda n: ast.Name(id=n, ctx=ast.Load())),
        st.one_of(
            st.integers(-(2**70), 2**70),
            st.text(max_size=8),
            st.none(),
            st.booleans(),
            st.floats(allow_nan=True),
        ).map(lambda v: ast.Constant(value=v)),
    )

    def extend(children: st.SearchStrategy[ast.expr]) -> st.SearchStrategy[ast.expr]:
        ops = st.sampled_from([ast.Add(), ast.Sub(), ast.Mult(), ast.Pow(), ast.Mod()])
        cmps = st.sampled_from([ast.Eq(), ast.In(), ast.Lt(), ast.Is(), ast.NotIn()])
        return st.one_of(
            st.builds(
                lambda f, a: ast.Call(func=f, args=a, keywords=[]),
                st.sampled_from(_NAMES).map(lambda n: ast.Name(id=n, ctx=ast.Load())),
                st.lists(children, max_size=3),
            ),
            st.builds(
                lambda v, a: ast.Attribute(value=v, attr=a, ctx=ast.Load()),
                children,
                st.sampled_from(["__class__", "upper", "x"]),
            ),
            st.builds(lambda e: ast.List(elts=e, ctx=ast.Load()), st.lists(children, max_size=3)),
            st.builds(lambda k, v: ast.Dict(keys=[k], values=[v]), children, children),
            st.builds(lambda a, o, b: ast.BinOp(left=a, op=o, right=b), children, ops, children),
            st.builds(
                lambda a, o, b: ast.Compare(left=a, ops=[o], comparators=[b]),
                children,
                cmps,
                children,
            ),
            st.builds(
                lambda v, s: ast.Subscript(value=v, slice=s, ctx=ast.Load()), children, children
            ),
            st.builds(
                lambda e, it: ast.ListComp(
                    elt=e,
                    generators=[
                        ast.comprehension(
                            target=ast.Name(id="x", ctx=ast.Store()), iter=it, ifs=[], is_async=0
                        )
                    ],
                ),
                children,
                children,
            ),
            st.builds(
                lambda b: ast.Lambda(
                    args=ast.arguments(
                        posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]
                    ),
                    body=b,
                ),
                children,
            ),
            st.builds(lambda a, b: ast.BoolOp(op=ast.Or(), values=[a, b]), children, children),
            st.builds(lambda a: ast.UnaryOp(op=ast.USub(), operand=a), children),
        )

    return st.recursive(leaves, extend, max_leaves=12)


def _programs() -> st.SearchStrategy[str]:
    stmt = st.one_of(
        _exprs().map(lambda e: ast.Expr(value=e)),
        st.builds(
            lambda n, e: ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=e),
            st.sampled_from(["x", "y", "Retrieval", "_z"]),
            _exprs(),
        ),
    )
    return st.lists(stmt, min_size=1, max_size=4).map(
        lambda body: ast.unparse(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[])))
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_random_programs_only_ever_raise_program_rejected(src: str) -> None:
    try:
        result = run(src, max_steps=500, timeout_s=1.0)
    except ProgramRejected as exc:
        assert str(exc)  # every rejection carries a reason
    else:
        assert _plain(result)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_random_text_only_ever_raises_program_rejected(src: str) -> None:
    try:
        result = run(src, max_steps=500, timeout_s=1.0)
    except ProgramRejected as exc:
        assert str(exc)  # every rejection carries a reason
    else:
        assert _plain(result)

"""A sandboxed executor for planner programs (seed 004, §3.3 "Execution-based Correction").

The published RAG-Critic code runs the planner's Python with a bare ``exec()``. Here the
model's program is *data*: it is parsed with :mod:`ast`, checked against an allow-list,
and evaluated by a small interpreter over the syntax tree — no Python from the model is
ever compiled or executed.

Allowed: assignments to plain names, calls of the given action functions (positional
and keyword arguments), literals (str, int, float, bool, None), list/tuple/dict displays,
list/dict comprehensions (with ``if`` filters), ``+`` on str/list/int, comparisons,
``and``/``or``/``not``, ``x if c else y``, and subscripts with an int, a slice or a
non-underscore string key. Everything else — imports, attributes, lambdas, function or
class definitions, ``for``/``while``, ``eval``/``open`` (unknown names), f-strings,
``*``/``**`` — is rejected before anything runs.

Why an interpreter and not a subprocess: the actions close over ragtriage's pipeline (an
ONNX embedder, an index, an LLM runner) which cannot cross a process boundary cheaply,
and the interpreter can bound everything the program does itself:

* **steps**: every evaluated node and every comprehension iteration costs one step; there
  are no loops or recursion in the language, so ``max_steps`` bounds the work;
* **time**: a monotonic deadline is checked at every step and after every action call;
* **calls**: at most ``max_calls`` action calls;
* **memory**: a value is measured *before* it is kept (string and list concatenation are
  sized before they are built; displays, comprehension results and action results are
  walked with a node budget, so shared sub-lists cannot make a walk explode); each value
  is capped at ``max_items`` nodes / ``max_chars`` characters and the whole run at
  ``max_alloc`` characters-or-items allocated;
* **depth**: the source is capped at ``max_source_chars`` and the syntax tree at
  ``max_depth`` levels (checked iteratively), so neither the parser nor the interpreter
  can overflow the stack.

Every refusal and every overrun raises :class:`ragtriage.errors.ProgramRejected`; so does
an action that raises (the model passed it bad arguments). The actions themselves are
trusted library code: a single slow action call cannot be interrupted, only noticed after.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ragtriage.errors import ProgramRejected

__all__ = ["ProgramLimits", "run_program"]

Action = Callable[..., Any]

_INT_LIMIT = 2**63


class ProgramLimits:
    """The budgets of one run (plain attributes; see :func:`run_program`)."""

    __slots__ = (
        "max_alloc",
        "max_calls",
        "max_chars",
        "max_depth",
        "max_items",
        "max_source_chars",
        "max_steps",
        "timeout_s",
    )

    def __init__(
        self,
        *,
        max_steps: int = 10_000,
        timeout_s: float = 10.0,
        max_calls: int = 32,
        max_items: int = 10_000,
        max_chars: int = 1_000_000,
        max_alloc: int = 8_000_000,
        max_source_chars: int = 20_000,
        max_depth: int = 40,
    ) -> None:
        self.max_steps = max_steps
        self.timeout_s = timeout_s
        self.max_calls = max_calls
        self.max_items = max_items
        self.max_chars = max_chars
        self.max_alloc = max_alloc
        self.max_source_chars = max_source_chars
        self.max_depth = max_depth


_STATEMENTS = (ast.Assign, ast.Expr)
_EXPRESSIONS = (
    ast.Call,
    ast.Name,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.ListComp,
    ast.DictComp,
    ast.Subscript,
    ast.Slice,
    ast.BinOp,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.IfExp,
)
_HELPERS = (
    ast.Module,
    ast.comprehension,
    ast.keyword,
    ast.Load,
    ast.Store,
    ast.Add,
    ast.And,
    ast.Or,
    ast.Not,
    ast.USub,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.In,
    ast.NotIn,
)
_ALLOWED = _STATEMENTS + _EXPRESSIONS + _HELPERS


def _line(node: ast.AST) -> int | None:
    line = getattr(node, "lineno", None)
    return line if isinstance(line, int) else None


def _reject(reason: str, node: ast.AST | None = None) -> ProgramRejected:
    return ProgramRejected(reason, line=_line(node) if node is not None else None)


def _check_name(name: str, node: ast.AST) -> None:
    if name.startswith("_"):
        raise _reject(f"name {name!r} starts with an underscore", node)


def _static_check(tree: ast.Module, actions: Mapping[str, Action], limits: ProgramLimits) -> None:
    """Reject every construct outside the allow-list (iteratively: no recursion)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limits.max_depth:
            raise _reject(f"program nested deeper than {limits.max_depth} levels", node)
        if not isinstance(node, _ALLOWED):
            raise _reject(f"{type(node).__name__} is not allowed", node)
        if isinstance(node, ast.Module):
            for stmt in node.body:
                if not isinstance(stmt, _STATEMENTS):
                    raise _reject(f"{type(stmt).__name__} is not allowed", stmt)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                _check_target(target, actions)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise _reject("only the action functions may be called, by name", node)
            if node.func.id not in actions:
                raise _reject(f"{node.func.id!r} is not an action function", node)
            for kw in node.keywords:
                if kw.arg is None:
                    raise _reject("**kwargs is not allowed", node)
                _check_name(kw.arg, node)
        elif isinstance(node, ast.Name):
            _check_name(node.id, node)
        elif isinstance(node, ast.Constant):
            value = node.value
            if not (value is None or isinstance(value, bool | int | float | str)):
                raise _reject(f"{type(value).__name__} literals are not allowed", node)
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_LIMIT:
                raise _reject("integer literal out of range", node)
            if isinstance(value, str) and len(value) > limits.max_chars:
                raise _reject("string literal too long", node)
        elif isinstance(node, ast.comprehension):
            if node.is_async:
                raise _reject("async comprehensions are not allowed", node)
            _check_target(node.target, actions)
        elif isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                _check_name(key.value, node)
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.Call):
            children = [c for c in children if c is not node.func]  # the name was checked
        stack.extend((child, depth + 1) for child in children)


def _check_target(target: ast.AST, actions: Mapping[str, Action]) -> None:
    names = target.elts if isinstance(target, ast.Tuple) else [target]
    for name in names:
        if not isinstance(name, ast.Name):
            raise _reject("only plain names can be assigned", target)
        _check_name(name.id, name)
        if name.id in actions:
            raise _reject(f"cannot assign to the action {name.id!r}", name)


class _Interpreter:
    def __init__(
        self, actions: Mapping[str, Action], env: dict[str, Any], limits: ProgramLimits
    ) -> None:
        self.actions = actions
        self.env = env
        self.limits = limits
        self.steps = 0
        self.calls = 0
        self.alloc = 0
        self.deadline = time.monotonic() + limits.timeout_s

    # -- budgets ---------------------------------------------------------------------

    def tick(self, node: ast.AST) -> None:
        self.steps += 1
        if self.steps > self.limits.max_steps:
            raise _reject(f"step budget of {self.limits.max_steps} exceeded", node)
        if time.monotonic() > self.deadline:
            raise _reject(f"time budget of {self.limits.timeout_s:g} s exceeded", node)

    def charge(self, amount: int, node: ast.AST) -> None:
        self.alloc += amount
        if self.alloc > self.limits.max_alloc:
            raise _reject(f"allocation budget of {self.limits.max_alloc} exceeded", node)

    def measure(self, value: Any, node: ast.AST) -> int:
        """Nodes + characters of ``value``; rejects foreign types and oversize values
        without walking more than the budget (shared sub-lists count each time)."""
        budget = self.limits.max_items
        chars = 0
        count = 0
        stack: list[tuple[Any, int]] = [(value, 0)]
        while stack:
            item, depth = stack.pop()
            count += 1
            if count > budget:
                raise _reject(f"value larger than {budget} items", node)
            if depth > self.limits.max_depth:
                raise _reject("value nested too deeply", node)
            if item is None or isinstance(item, bool | float):
                continue
            if isinstance(item, int):
                if abs(item) >= _INT_LIMIT:
                    raise _reject("integer out of range", node)
            elif isinstance(item, str):
                chars += len(item)
                if chars > self.limits.max_chars:
                    raise _reject(f"value longer than {self.limits.max_chars} characters", node)
            elif isinstance(item, list):
                stack.extend((x, depth + 1) for x in item)
            elif isinstance(item, dict):
                for k, v in item.items():
                    if not isinstance(k, str | int) or isinstance(k, bool):
                        raise _reject("dict keys must be str or int", node)
                    stack.append((k, depth + 1))
                    stack.append((v, depth + 1))
            else:
                raise _reject(f"values of type {type(item).__name__} are not allowed", node)
        return count + chars

    def keep(self, value: Any, node: ast.AST) -> Any:
        self.charge(self.measure(value, node), node)
        return value

    # -- statements ------------------------------------------------------------------

    def run(self, tree: ast.Module) -> Any:
        result: Any = None
        for stmt in tree.body:
            self.tick(stmt)
            if isinstance(stmt, ast.Assign):
                value = self.eval(stmt.value)
                for target in stmt.targets:
                    self.assign(target, value, self.env)
                result = value
            else:
                assert isinstance(stmt, ast.Expr)
                result = self.eval(stmt.value)
        return result

    def assign(self, target: ast.AST, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
            return
        assert isinstance(target, ast.Tuple)
        if not isinstance(value, list) or len(value) != len(target.elts):
            raise _reject(f"cannot unpack into {len(target.elts)} names", target)
        for name, item in zip(target.elts, value, strict=True):
            assert isinstance(name, ast.Name)
            env[name.id] = item

    # -- expressions -----------------------------------------------------------------

    def eval(self, node: ast.AST, env: dict[str, Any] | None = None) -> Any:
        self.tick(node)
        scope = self.env if env is None else env
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            if node.id in self.actions:
                raise _reject(f"the action {node.id!r} can only be called", node)
            raise _reject(f"name {node.id!r} is not defined", node)
        if isinstance(node, ast.List | ast.Tuple):
            return self.keep([self.eval(e, scope) for e in node.elts], node)
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    raise _reject("** in a dict display is not allowed", node)
                key = self.eval(k, scope)
                self.check_key(key, node)
                out[key] = self.eval(v, scope)
            return self.keep(out, node)
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        if isinstance(node, ast.ListComp | ast.DictComp):
            return self.comprehension(node, scope)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, scope)
        if isinstance(node, ast.BinOp):
            return self.binop(node, scope)
        if isinstance(node, ast.Compare):
            return self.compare(node, scope)
        if isinstance(node, ast.BoolOp):
            value: Any = None
            for operand in node.values:
                value = self.eval(operand, scope)
                truthy = bool(value)
                if isinstance(node.op, ast.And) and not truthy:
                    return value
                if isinstance(node.op, ast.Or) and truthy:
                    return value
            return value
        if isinstance(node, ast.UnaryOp):
            operand = self.eval(node.operand, scope)
            if isinstance(node.op, ast.Not):
                return not operand
            if isinstance(operand, int | float) and not isinstance(operand, bool):
                return -operand
            raise _reject("unary minus needs a number", node)
        if isinstance(node, ast.IfExp):
            branch = node.body if self.eval(node.test, scope) else node.orelse
            return self.eval(branch, scope)
        raise _reject(f"{type(node).__name__} is not allowed", node)

    def check_key(self, key: Any, node: ast.AST) -> None:
        if isinstance(key, bool) or not isinstance(key, str | int):
            raise _reject("dict keys must be str or int", node)
        if isinstance(key, str) and key.startswith("_"):
            raise _reject(f"key {key!r} starts with an underscore", node)

    def call(self, node: ast.Call, scope: dict[str, Any]) -> Any:
        assert isinstance(node.func, ast.Name)
        name = node.func.id
        fn = self.actions.get(name)
        if fn is None:
            raise _reject(f"{name!r} is not an action function", node)
        args: list[Any] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise _reject("*args is not allowed", node)
            args.append(self.eval(arg, scope))
        kwargs = {kw.arg: self.eval(kw.value, scope) for kw in node.keywords if kw.arg}
        self.calls += 1
        if self.calls > self.limits.max_calls:
            raise _reject(f"call budget of {self.limits.max_calls} exceeded", node)
        try:
            result = fn(*args, **kwargs)
        except ProgramRejected:
            raise
        except Exception as exc:  # the model passed bad arguments: its program fails
            raise _reject(
                f"action {name} failed: {type(exc).__name__}: {exc}"[:500], node
            ) from None
        if time.monotonic() > self.deadline:
            raise _reject(f"time budget of {self.limits.timeout_s:g} s exceeded", node)
        if isinstance(result, tuple):
            result = list(result)
        return self.keep(result, node)

    def generators(
        self, gens: list[ast.comprehension], scope: dict[str, Any], node: ast.AST
    ) -> Iterator[dict[str, Any]]:
        """Environments of every iteration of nested ``for ... in ... if ...`` clauses."""
        if not gens:
            yield scope
            return
        first, rest = gens[0], gens[1:]
        iterable = self.eval(first.iter, scope)
        if isinstance(iterable, dict):
            items: list[Any] = list(iterable)
        elif isinstance(iterable, list | str):
            items = list(iterable)
        else:
            raise _reject("comprehensions iterate over a list, dict or str", node)
        for item in items:
            self.tick(node)
            inner = dict(scope)
            self.assign(first.target, item, inner)
            if all(self.eval(cond, inner) for cond in first.ifs):
                yield from self.generators(rest, inner, node)

    def comprehension(self, node: ast.ListComp | ast.DictComp, scope: dict[str, Any]) -> Any:
        limit = self.limits.max_items
        if isinstance(node, ast.ListComp):
            out: list[Any] = []
            for inner in self.generators(node.generators, scope, node):
                out.append(self.eval(node.elt, inner))
                if len(out) > limit:
                    raise _reject(f"value larger than {limit} items", node)
            return self.keep(out, node)
        result: dict[Any, Any] = {}
        for inner in self.generators(node.generators, scope, node):
            key = self.eval(node.key, inner)
            self.check_key(key, node)
            result[key] = self.eval(node.value, inner)
            if len(result) > limit:
                raise _reject(f"value larger than {limit} items", node)
        return self.keep(result, node)

    def subscript(self, node: ast.Subscript, scope: dict[str, Any]) -> Any:
        container = self.eval(node.value, scope)
        if isinstance(node.slice, ast.Slice):
            bounds = [
                None if part is None else self.eval(part, scope)
                for part in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            if not all(
                b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds
            ):
                raise _reject("slice bounds must be integers", node)
            if bounds[2] == 0:
                raise _reject("slice step cannot be zero", node)
            if not isinstance(container, list | str):
                raise _reject("only lists and strings can be sliced", node)
            return self.keep(container[bounds[0] : bounds[1] : bounds[2]], node)
        key = self.eval(node.slice, scope)
        if isinstance(container, list | str):
            if isinstance(key, bool) or not isinstance(key, int):
                raise _reject("list and string indices must be integers", node)
            if not -len(container) <= key < len(container):
                raise _reject(f"index {key} out of range", node)
            return container[key]
        if isinstance(container, dict):
            self.check_key(key, node)
            if key not in container:
                raise _reject(f"key {key!r} not found", node)
            return container[key]
        raise _reject(f"cannot index a {type(container).__name__}", node)

    def binop(self, node: ast.BinOp, scope: dict[str, Any]) -> Any:
        if not isinstance(node.op, ast.Add):
            raise _reject(f"operator {type(node.op).__name__} is not allowed", node)
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        if isinstance(left, str) and isinstance(right, str):
            if len(left) + len(right) > self.limits.max_chars:
                raise _reject(f"string longer than {self.limits.max_chars} characters", node)
            self.charge(len(left) + len(right), node)
            return left + right
        if isinstance(left, list) and isinstance(right, list):
            if len(left) + len(right) > self.limits.max_items:
                raise _reject(f"list longer than {self.limits.max_items} items", node)
            return self.keep(left + right, node)
        numbers = (int, float)
        if (
            isinstance(left, numbers)
            and isinstance(right, numbers)
            and not isinstance(left, bool)
            and not isinstance(right, bool)
        ):
            total = left + right
            if isinstance(total, int) and abs(total) >= _INT_LIMIT:
                raise _reject("integer out of range", node)
            return total
        raise _reject(f"cannot add {type(left).__name__} and {type(right).__name__}", node)

    def compare(self, node: ast.Compare, scope: dict[str, Any]) -> bool:
        left = self.eval(node.left, scope)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.eval(right_node, scope)
            try:
                ok = _compare(op, left, right)
            except TypeError as exc:
                raise _reject(f"cannot compare: {exc}", node) from None
            if not ok:
                return False
            left = right
        return True


def _compare(op: ast.cmpop, left: Any, right: Any) -> bool:
    if isinstance(op, ast.Eq):
        return bool(left == right)
    if isinstance(op, ast.NotEq):
        return bool(left != right)
    if isinstance(op, ast.In | ast.NotIn):
        if not isinstance(right, list | dict | str) or (
            isinstance(right, str) and not isinstance(left, str)
        ):
            raise TypeError(f"'in' needs a list, dict or str, not {type(right).__name__}")
        found = left in right
        return found if isinstance(op, ast.In) else not found
    numbers = (int, float)
    if not (
        (isinstance(left, numbers) and isinstance(right, numbers))
        or (isinstance(left, str) and isinstance(right, str))
    ):
        raise TypeError("only two numbers or two strings can be ordered")
    a: Any = left
    b: Any = right
    if isinstance(op, ast.Lt):
        return bool(a < b)
    if isinstance(op, ast.LtE):
        return bool(a <= b)
    if isinstance(op, ast.Gt):
        return bool(a > b)
    if isinstance(op, ast.GtE):
        return bool(a >= b)
    raise TypeError(f"operator {type(op).__name__} is not allowed")


def run_program(
    source: str,
    actions: Mapping[str, Action],
    *,
    max_steps: int = 10_000,
    timeout_s: float = 10.0,
    variables: Mapping[str, Any] | None = None,
    limits: ProgramLimits | None = None,
) -> Any:
    """Run ``source`` over ``actions`` and return the value of its last statement.

    ``variables`` are the names the program starts with (e.g. ``query``, ``docs``,
    ``prediction``); they must be plain data (str, int, float, bool, None, lists, dicts).
    ``limits`` sets the other budgets (calls, sizes, depth); ``max_steps`` and
    ``timeout_s`` override its fields. Raises :class:`ProgramRejected` on any refusal or
    overrun — never another exception for anything the program does.
    """
    base = limits if limits is not None else ProgramLimits()
    lim = ProgramLimits(
        max_steps=max_steps,
        timeout_s=timeout_s,
        max_calls=base.max_calls,
        max_items=base.max_items,
        max_chars=base.max_chars,
        max_alloc=base.max_alloc,
        max_source_chars=base.max_source_chars,
        max_depth=base.max_depth,
    )
    if not isinstance(source, str):
        raise ProgramRejected("the program must be a string")
    if len(source) > lim.max_source_chars:
        raise ProgramRejected(f"program longer than {lim.max_source_chars} characters")
    for name in actions:
        if not name.isidentifier() or name.startswith("_"):
            raise ValueError(f"bad action name {name!r}")  # the caller's bug, not the model's
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise ProgramRejected(f"syntax error: {exc.msg}", line=exc.lineno) from None
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        raise ProgramRejected(f"cannot parse: {type(exc).__name__}") from None
    _static_check(tree, actions, lim)
    env: dict[str, Any] = {}
    interp = _Interpreter(actions, env, lim)
    anchor = ast.Module(body=[], type_ignores=[])
    for name, value in (variables or {}).items():
        if not name.isidentifier() or name.startswith("_") or name in actions:
            raise ValueError(f"bad variable name {name!r}")
        env[name] = interp.keep(list(value) if isinstance(value, tuple) else value, anchor)
    interp.alloc = 0  # the caller's inputs do not count against the program
    try:
        return interp.run(tree)
    except (RecursionError, MemoryError) as exc:
        raise ProgramRejected(f"program aborted: {type(exc).__name__}") from None

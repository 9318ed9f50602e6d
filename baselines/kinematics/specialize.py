"""Partial evaluation of the written-out closed forms on one model's constants.

The leg IK's hot paths (:class:`~upright.baselines.kinematics.leg_ik.LegSolver`) are written out
in floats for any leg geometry: each begins by unpacking a tuple of the leg's constant vector
components and products. For a given leg many of those are exactly 0 or ±1 (the joint axes of both
robots lie along the model's axes or in one of its planes), and a product with 0 or 1 is work
whose result is known. :func:`specialize` compiles a copy of such a method with the constants put
in and that work left out:

* a name bound by the leading constant unpack becomes its value; operations on constants only are
  computed once (the same float operations, so the same numbers);
* ``0 · x`` and ``x · 0`` are a zero; a zero added to or subtracted from ``x`` leaves ``x`` (``0 −
  x`` is ``−x``), a zero times or divided by anything is a zero; ``1 · x`` is ``x`` and ``−1 · x``
  is ``−x``; a variable assigned a constant or a zero is one where it is read later (straight-line
  code; a name assigned inside an ``if`` is not known after it);
* negations leave products and end in sums: ``x + (−y)·z`` is ``x − y·z``, ``−(−x)`` is ``x``
  (:func:`_move_negations`).

Every result is the float the unspecialized method computes, except that a zero may come out with
the other sign (``x + 0.0`` is ``+0.0`` for ``x = −0.0``; ``−0.0 == 0.0``) and that ``0 · inf`` is
not NaN (the closed forms multiply the constants only with finite numbers).
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
import types
from typing import Any, Callable


class _Zero:
    """A product with an exact zero: 0.0 or -0.0 (which one is not tracked)."""


ZERO = _Zero()


def _constant(node: ast.expr) -> float | _Zero | None:
    """The value of a folded node: a float constant, ZERO, or None (not known)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        return node.value
    if isinstance(node, ast.Name) and node.id == "__zero__":
        return ZERO
    return None


def _zero_node() -> ast.expr:
    return ast.Name(id="__zero__", ctx=ast.Load())


class _Folder(ast.NodeTransformer):
    """Folds the expressions of one function body, statement by statement (see the module docstring)."""

    def __init__(self, known: dict[str, float]) -> None:
        self.known: dict[str, float | _Zero] = dict(known)

    # ------------------------------------------------------------------ expressions
    def visit_Name(self, node: ast.Name) -> ast.expr:
        if isinstance(node.ctx, ast.Load) and node.id in self.known:
            value = self.known[node.id]
            return _zero_node() if value is ZERO else ast.Constant(value=value)
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        node = self.generic_visit(node)
        if isinstance(node.op, ast.USub):
            value = _constant(node.operand)
            if value is ZERO:
                return _zero_node()
            if isinstance(value, float):
                return ast.Constant(value=-value)
            return _negate(node.operand)
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        node = self.generic_visit(node)
        a, b = _constant(node.left), _constant(node.right)
        op = node.op
        if isinstance(a, float) and isinstance(b, float):
            try:
                return ast.Constant(value=_apply(op, a, b))
            except ZeroDivisionError:
                return node
        if isinstance(op, ast.Mult):
            if a is ZERO or b is ZERO or a == 0.0 or b == 0.0:
                return _zero_node()
            if a == 1.0:
                return node.right
            if b == 1.0:
                return node.left
            if a == -1.0:
                return _negate(node.right)
            if b == -1.0:
                return _negate(node.left)
        elif isinstance(op, ast.Div):
            if a is ZERO or a == 0.0:
                return _zero_node()
        elif isinstance(op, (ast.Add, ast.Sub)):
            if b is ZERO or b == 0.0:
                return node.left
            if a is ZERO or a == 0.0:
                return node.right if isinstance(op, ast.Add) else _negate(node.right)
        return _move_negations(node)

    # ------------------------------------------------------------------ statements
    def visit_Assign(self, node: ast.Assign) -> ast.stmt:
        node.value = self.visit(node.value)
        for target in node.targets:
            self._bind(target, node.value)
        return node

    def _bind(self, target: ast.expr, value: ast.expr | None) -> None:
        """Record what ``target`` holds after the assignment of ``value`` (None: not known)."""
        if isinstance(target, ast.Name):
            known = _constant(value) if value is not None else None
            if known is None:
                self.known.pop(target.id, None)
            else:
                self.known[target.id] = known
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                else [None] * len(target.elts)
            for t, v in zip(target.elts, values):
                self._bind(t, v)
        else:  # q[4] = ..., self.x = ...: the base is read, not bound
            self.visit(target)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        node.value = self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self.known.pop(node.target.id, None)
        return node

    def visit_If(self, node: ast.If) -> ast.stmt:
        node.test = self.visit(node.test)
        before = dict(self.known)
        node.body = [self.visit(s) for s in node.body]
        after_body = self.known
        self.known = dict(before)
        node.orelse = [self.visit(s) for s in node.orelse]
        # a name is known after the if only where both branches leave the same value
        self.known = {k: v for k, v in after_body.items() if k in self.known and _same(v, self.known[k])}
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, (ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.Lambda)):
            raise NotImplementedError(f"specialize: {type(node).__name__} is not supported")
        return super().generic_visit(node)


def _negated(node: ast.expr) -> ast.expr | None:
    """``x`` where ``node`` is ``−x``, else None."""
    return node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) else None


def _negate(node: ast.expr) -> ast.expr:
    """``−node``; ``x`` where ``node`` is ``−x``."""
    inner = _negated(node)
    return inner if inner is not None else ast.UnaryOp(op=ast.USub(), operand=node)


def _move_negations(node: ast.BinOp) -> ast.expr:
    """``node`` with its operands' negations taken out of products and quotients and into sums and
    differences, where a negation goes: ``x + −y`` is ``x − y``, ``x − −y`` is ``x + y``, ``−x + y``
    is ``y − x``, ``(−x)·y`` and ``x·(−y)`` are ``−(x·y)``, ``(−x)·(−y)`` is ``x·y`` (the same for
    ``/``). Each is the same float in IEEE arithmetic (subtraction is the addition of the negated
    operand, rounding is symmetric about zero); what it saves is the negation."""
    op = node.op
    left, right = _negated(node.left), _negated(node.right)
    if isinstance(op, (ast.Mult, ast.Div)):
        if left is not None and right is not None:
            return ast.BinOp(left=left, op=op, right=right)
        if left is not None:
            return _negate(ast.BinOp(left=left, op=op, right=node.right))
        if right is not None:
            return _negate(ast.BinOp(left=node.left, op=op, right=right))
    elif isinstance(op, (ast.Add, ast.Sub)):
        if right is not None:
            return _move_negations(ast.BinOp(left=node.left, op=ast.Sub() if isinstance(op, ast.Add) else ast.Add(),
                                             right=right))  # −x + y, where x − −y gave it, is y − x
        if left is not None and isinstance(op, ast.Add):
            return ast.BinOp(left=node.right, op=ast.Sub(), right=left)
    return node


def _same(a: float | _Zero, b: float | _Zero) -> bool:
    """Whether two known values are the same (floats: equal, with the same sign)."""
    if a is ZERO or b is ZERO:
        return a is b
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)  # type: ignore[arg-type]


def _apply(op: ast.operator, a: float, b: float) -> float:
    """``a op b`` for the arithmetic the closed forms use; ZeroDivisionError where not folded."""
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.Div):
        return a / b
    if isinstance(op, ast.Mod):
        return a % b
    raise ZeroDivisionError  # not folded (the caller keeps the node)


class _ZeroToConstant(ast.NodeTransformer):
    """The zeros left where they are read (a call's argument, a comparison, a result) become 0.0."""

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return ast.Constant(value=0.0) if node.id == "__zero__" else node


#: Per method its source, the attribute it unpacks its constants from and their names; per method
#: and constants the compiled function.
_TEMPLATES: dict[Callable[..., Any], tuple[str, str, tuple[str, ...]]] = {}
_COMPILED: dict[tuple[Callable[..., Any], tuple[float, ...]], Callable[..., Any]] = {}


def _parse(source: str, qualname: str) -> tuple[ast.FunctionDef, int]:
    """The function of ``source`` and the index of its constant unpack in its body (after the docstring)."""
    func = ast.parse(source).body[0]
    if not isinstance(func, ast.FunctionDef):
        raise TypeError(f"specialize: {qualname} is not a plain function")
    body = func.body
    start = 1 if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0  # the docstring
    unpack = body[start]
    if not (isinstance(unpack, ast.Assign) and isinstance(unpack.targets[0], ast.Tuple)
            and isinstance(unpack.value, ast.Attribute) and isinstance(unpack.value.value, ast.Name)
            and unpack.value.value.id == "self"):
        raise ValueError(f"specialize: {qualname} does not begin with (names) = self.<constants>")
    return func, start


def specialize(method: Callable[..., Any], instance: Any) -> Callable[..., Any]:
    """``method`` (a function of ``instance``'s class) compiled for ``instance``'s constants and
    bound to it. The method's first statement (after its docstring) must unpack a tuple attribute
    of ``self`` into names (``(a, b, ...) = self._constants``); those are the constants. Each
    method is compiled once per process for the same constants (a few ms; later instances reuse it)."""
    template = _TEMPLATES.get(method)
    if template is None:
        source = textwrap.dedent(inspect.getsource(method))
        func, start = _parse(source, method.__qualname__)
        unpack = func.body[start]
        names = tuple(t.id for t in unpack.targets[0].elts)  # type: ignore[attr-defined]
        template = _TEMPLATES[method] = (source, unpack.value.attr, names)  # type: ignore[attr-defined]
    source, attr, names = template
    values = tuple(float(v) for v in getattr(instance, attr))
    if len(names) != len(values):
        raise ValueError(f"specialize: {len(names)} names for {len(values)} constants in {method.__qualname__}")
    compiled = _COMPILED.get((method, values))
    if compiled is None:
        func, start = _parse(source, method.__qualname__)
        folder = _Folder(dict(zip(names, values)))
        func.body = [_ZeroToConstant().visit(folder.visit(s)) for s in func.body[start + 1:]]
        func.decorator_list = []
        tree = ast.Module(body=[func], type_ignores=[])
        ast.fix_missing_locations(tree)
        namespace: dict[str, Any] = {}
        exec(compile(tree, f"<{method.__qualname__} specialized>", "exec"), method.__globals__, namespace)
        compiled = _COMPILED[(method, values)] = namespace[func.name]
    return types.MethodType(compiled, instance)


__all__ = ["specialize"]

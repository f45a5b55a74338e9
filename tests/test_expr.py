"""The expression layer: numbers and precedence render as Excel reads them."""

from __future__ import annotations

import math

import pytest

from xlcalc.expr.excel import render_number
from xlcalc.expr.functions import ceiling, eq, floor_int, if_, max_, roundup
from xlcalc.expr.nodes import Bool, Func, Num, Text, Var


@pytest.mark.parametrize(
    "value, text",
    [(1e9, "1E+9"), (1e12, "1E+12"), (86400, "86400"), (0.4, "0.4"), (6, "6"), (2.5e-7, "2.5E-7"),
     (1.5e21, "1.5E+21"), (-3, "-3"), (123456.5, "123456.5")],
)
def test_numbers_render_as_excel_writes_them(value, text):
    assert render_number(value) == text
    assert float(text) == value


def test_non_finite_numbers_are_refused():
    with pytest.raises(ValueError):
        render_number(math.inf)


def _text(e):
    return e.to_excel(lambda n: n)


def test_precedence_keeps_meaning():
    a, b, c = Var("a"), Var("b"), Var("c")
    assert _text(a - (b - c)) == "=a-(b-c)"
    assert _text((a - b) - c) == "=a-b-c"
    assert _text(a / (b * c)) == "=a/(b*c)"
    assert _text((a + b) * c) == "=(a+b)*c"
    assert _text(a ** (b ** c)) == "=a^(b^c)"  # Excel's ^ is left-associative
    # Excel's unary minus binds tighter than ^ (-2^2 = 4), so a negation is always bracketed
    assert _text(-(a ** 2)) == "=(-(a^2))"
    assert _text(a * -1) == "=a*(-1)"


def test_evaluation_matches_python_arithmetic():
    a, b, c = Var("a"), Var("b"), Var("c")
    env = {"a": 7.0, "b": 3.0, "c": 2.0}
    for expr, expected in [
        (a - (b - c), 7 - (3 - 2)), (a / (b * c), 7 / 6), (a ** (b - c), 7.0), (-(a ** 2), -49.0),
    ]:
        assert expr.evaluate(env) == expected


def test_if_is_lazy_like_a_spreadsheet():
    x = Var("x")
    guarded = if_(eq(x, 0), 0, 1 / x)
    assert guarded.evaluate({"x": 0}) == 0  # the untaken 1/0 branch is never computed
    assert guarded.evaluate({"x": 4}) == 0.25


def test_text_is_quoted_and_compared_case_insensitively():
    r = Var("r")
    cond = eq(r, 'say "hi"')
    assert _text(cond) == '=r="say ""hi"""'
    assert eq("Full", "full") is True
    assert if_(eq(r, "full"), 1, 2).evaluate({"r": "FULL"}) == 1


def test_helpers_compute_directly_on_numbers():
    assert if_(True, 1, 2) == 1
    assert max_(1, 5, 3) == 5
    assert ceiling(907.2, 8) == 912
    assert ceiling(864 * 1.05 / 8 * 8, 8) == 912
    assert roundup(2.01, 0) == 3
    assert floor_int(2.9999999999999996) == 3  # float noise is not a whole unit less
    assert floor_int(2.7) == 2


def test_only_portable_functions_can_be_built():
    with pytest.raises(ValueError, match="portable"):
        Func("XLOOKUP", (Num(1),))


def test_an_expression_has_no_truth_value():
    with pytest.raises(TypeError):
        bool(Var("a") > 1)


def test_constants_render():
    assert _text(Bool(True)) == "=TRUE"
    assert _text(Text("none")) == '="none"'
    assert _text(Num(-2.5)) == "=(-2.5)"


def test_float_noise_cannot_change_a_whole_count():
    import xlcalc as x

    # 1809 GPUs in replicas of 2 -> 905 replicas = 1810 GPUs; +10% spare = 1991 exactly, though
    # 1810 * 1.1 is 1991.0000000000002 in binary floating point
    assert 1810 * 1.1 != 1991
    assert x.gpus_whole_nodes(1809, 2, 0.1, 1) == 1991
    assert "CEILING(ROUND(" in x.gpus_whole_nodes.excel()


def test_a_constant_condition_is_folded_when_inputs_are_substituted():
    expr = if_(Var("gated"), 6, 4) * Var("f")
    assert _text(expr.substitute({"gated": Bool(False)})) == "=4*f"
    assert expr.substitute({"gated": Bool(True)}).evaluate({"f": 2}) == 12


def test_literals_left_by_a_substitution_are_folded():
    """What a substitution leaves constant is written as its value (values worked out by hand, as Excel gives them):
    a comparison of literals, IF on it, AND/OR with a constant arm, arithmetic and MIN/MAX/ROUND of whole numbers,
    ``&`` of texts and whole numbers."""
    from xlcalc.expr.functions import and_, concat, or_, round_

    k, x = Var("k"), Var("x")
    sub = {"k": Text("last")}
    assert _text(if_(eq(k, "first"), x, x * 2).substitute(sub)) == "=x*2"  # "last"="first" is FALSE
    assert _text(if_(eq(k, "LAST"), x, 0).substitute(sub)) == "=x"  # text compares case-insensitively
    n = Var("n")
    assert _text(if_(and_(n > 0, x > 1), "bad", "OK").substitute({"n": Num(0)})) == '="OK"'  # 0>0 is FALSE
    assert _text(if_(or_(n > 1, x > 1), 1, 2).substitute({"n": Num(3)})) == "=1"
    assert _text(if_(and_(n > 1, x > 1), 1, 2).substitute({"n": Num(3)})) == "=IF(AND(x>1),1,2)"
    assert _text(round_(max_(n, 1) / 1, 2).substitute({"n": Num(0)})) == "=1"  # MAX(0,1)/1 = 1
    assert _text((n * 4 - 6).substitute({"n": Num(2)})) == "=2"
    assert _text(concat("ep", " = ", n, " is ", x, " and", " more").substitute({"n": Num(1)})) == '="ep = 1 is "&x&" and more"'


def test_folding_stops_where_engines_could_differ():
    """Not folded: a non-whole number's arithmetic or text, division by zero, text order, non-ASCII case."""
    n, t = Var("n"), Var("t")
    assert _text((n + 0.2).substitute({"n": Num(0.1)})) == "=0.1+0.2"
    assert _text((n / 0).substitute({"n": Num(1)})) == "=1/0"
    assert _text((n / 3).substitute({"n": Num(1)})) == "=1/3"
    assert _text((t < "b").substitute({"t": Text("a")})) == '="a"<"b"'
    assert _text(eq(t, "É").substitute({"t": Text("é")})) == '="é"="É"'
    assert _text(Func("ROUND", (n, Num(-1))).substitute({"n": Num(15)})) == "=ROUND(15,(-1))"
    from xlcalc.expr.functions import concat
    assert _text(concat(n, "x").substitute({"n": Num(0.5)})) == '=0.5&"x"'


def test_unfolded_substitution_keeps_the_tree_as_written():
    from xlcalc.expr.nodes import unfolded

    expr = if_(eq(Var("k"), "first"), Var("a"), Var("b"))
    with unfolded():
        kept = expr.substitute({"k": Text("last")})
    assert kept.variables() == {"a", "b"} and _text(kept) == '=IF("last"="first",a,b)'
    assert expr.substitute({"k": Text("last")}).variables() == {"b"}


def test_ceiling_fast_path_is_ceiling_of_round():
    """CEILING(ROUND(x, 9), 1) computed with numbers takes an inlined path; it must equal the two helpers."""
    import random

    from xlcalc.expr import excel, functions

    rng = random.Random(0)
    xs = [rng.uniform(0, 1e6) for _ in range(20000)] + [rng.randint(0, 10**6) / rng.choice([1, 3, 7, 8, 1024])
                                                          for _ in range(20000)]
    xs += [864 * 1.05 / 8, 905 * 2 * 1.1, 3.0000000001, 2.9999999999, 0.0, 7.0]
    with _e_numeric():
        for x in xs:
            got = functions.ceiling(x)
            want = excel._ceiling(excel._round(x, 9), 1)
            assert got == want and type(got) is type(want), x
        assert functions.ceiling(864 * 1.05 / 8) == 114  # 113.40000000000001: the documented noise, rounded up once


def _e_numeric():
    from xlcalc.registry import numeric

    return numeric()


def test_a_bound_template_renders_and_evaluates_as_the_substituted_tree():
    """A template over placeholder slots, bound to references, is the tree with the references substituted: the
    same text (shared sub-results by their cell, references through the names given) and the same value."""
    from xlcalc.expr.nodes import identity
    from xlcalc.expr.template import Bound, Template
    from xlcalc.formulas.compute import train_flops

    def over(n, d):
        call = train_flops(params_b=Var(n), tokens_t=Var(d))
        return call, if_(call > 0, call / 1e21 + Var("k") * (Var(n) - 1), Var(n))

    call, tree = over("Sheet!$B$2", "Sheet!$C$2")
    tcall, ttree = over(Template.slot("n"), Template.slot("d"))
    template = Template(ttree, {tcall.key(): Template.sub_slot("f")}, ["n", "d", "f"])
    bound = template.bind({"n": "Sheet!$B$2", "d": "Sheet!$C$2", "f": "Sheet!$D$2"})
    assert isinstance(bound, Bound)
    subs = {call.key(): "Sheet!$D$2"}
    assert bound.to_excel(identity) == tree.to_excel(identity, subs) == (
        "=IF(Sheet!$D$2>0,Sheet!$D$2/1E+21+k*(Sheet!$B$2-1),Sheet!$B$2)")
    assert bound.to_excel(identity) == tree.to_excel(identity, subs)  # the template's text, rendered once, again
    names = {"Sheet!$B$2": "N", "Sheet!$C$2": "D", "k": "K"}
    assert bound.to_excel(names) == tree.to_excel(names, subs)  # the cell of a sub-result is written as given
    env = {"Sheet!$B$2": 70, "Sheet!$C$2": 2, "k": 3}
    assert bound.evaluate(env) == tree.evaluate(env) == pytest.approx(840 + 3 * 69)
    assert bound.variables() == tree.variables() == {"Sheet!$B$2", "Sheet!$C$2", "k"}
    assert bound.key() == tree.key() and (bound * 2).to_excel(identity) == "=" + bound.render(identity) + "*2"
    with pytest.raises(KeyError, match="slots"):
        template.bind({"n": "Sheet!$B$2"})


def test_a_bound_template_writes_braces_and_repeated_slots_as_the_tree():
    """The template's text is cut into pieces once made: braces of a text literal stay as they are, a slot used
    twice takes the same reference both times, and a name without a slot is written as it stands."""
    from xlcalc.expr.functions import concat
    from xlcalc.expr.nodes import identity
    from xlcalc.expr.template import Template

    def over(a, b):
        return concat("{", Var(a), "}{0}", Var(b), "{{", Var(a), "}")

    tree = over("S!$A$1", "S!$B$7")
    template = Template(over(Template.slot("a"), Template.slot("b")), {}, ["a", "b"])
    bound = template.bind({"a": "S!$A$1", "b": "S!$B$7"})
    assert bound.to_excel(identity) == tree.to_excel(identity) == '="{"&S!$A$1&"}{0}"&S!$B$7&"{{"&S!$A$1&"}"'
    assert template.bind({"a": "T!$C$3", "b": "k"}).to_excel(identity) == over("T!$C$3", "k").to_excel(identity)


def test_the_guards_around_a_template_that_read_no_slot_are_evaluated_once_per_keeping_environment():
    """An environment that keeps outer guards' outcomes (a workbook's, model._Env) has the guards around a template's
    formula that read none of its slots evaluated once for every cell bound to it; each cell's value is still the
    value its own tree has: the formula over its reference where the guards pass, the failing guard's value."""
    from xlcalc.expr.template import Template

    class Reads(dict):  # counts the reads of "g"; ``outer_guards`` where it keeps the outcomes
        def __init__(self, values, keep):
            super().__init__(values)
            self.g_reads = 0
            if keep:
                self.outer_guards = {}

        def __getitem__(self, var):
            self.g_reads += var == "g"
            return super().__getitem__(var)

    def over(x):
        return if_(eq(Var("g"), "OK"), if_(Var("n") > 0, if_(Var(x) > 1, Var(x) * Var("n"), "small"), "n <= 0"),
                   Var("g"))

    template = Template(over(Template.slot("x")), None, ["x"])
    for g, n, expected in (("ok", 3, {"A1": 15, "A2": "small"}), ("refused", 3, {"A1": "refused", "A2": "refused"}),
                           ("OK", -1, {"A1": "n <= 0", "A2": "n <= 0"})):
        for keep in (True, False):
            env = Reads({"g": g, "n": n, "A1": 5, "A2": 0}, keep)
            got = {ref: template.bind({"x": ref}).evaluate(env) for ref in ("A1", "A2")}
            assert got == expected == {ref: over(ref).evaluate(dict(env)) for ref in ("A1", "A2")}
            # kept: the guard's test reads g once for both cells (and its value once more where it fails); else
            # each cell reads it once (a bound cell's environment keeps what it reads)
            assert env.g_reads == ((1 if g.lower() == "ok" else 2) if keep else 2)
            assert list(getattr(env, "outer_guards", {template: 0})) == [template]

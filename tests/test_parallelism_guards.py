"""A Parallelism row's outer guards, taken out into one shared cell (compare.shared_guards), give each row's result
the value its guards written out give: every guard failing in turn, with the values a guard can meet (a number, a
text, TRUE, a check's message), evaluated both ways by the engine."""

from __future__ import annotations

import itertools

from xlcalc.expr.functions import eq
from xlcalc.expr.nodes import Func, Text, Var
from xlcalc.workbook.compare import shared_guards
from xlcalc.workbook.model import IsNumber


def _if(test, then, value):
    return Func("IF", (test, then, value))


ROW = {"Parallelism!$A$5", "Checks!$G$9"}  # the row's own cells: their guards stay in the result
# IF(ISNUMBER(a), IF(Checks!C1="OK", IF(ISNUMBER(b), IF(Checks!G9="OK", a*Parallelism!A5, "see row"), b),
#    "see Start"), a): two kinds of failing value (the input itself, a text), then a guard on the row's cell
GUARDED = _if(IsNumber(Var("a")),
              _if(eq(Var("Checks!$C$1"), "OK"),
                  _if(IsNumber(Var("b")),
                      _if(eq(Var("Checks!$G$9"), "OK"), Var("a") * Var("Parallelism!$A$5"), Text("see row")),
                      Var("b")),
                  Text("see Start")),
              Var("a"))


def test_shared_guards_give_every_value_the_guards_give():
    cells: dict[str, object] = {}

    def cell(tests):
        cells["Parallelism!$AE$5"] = tests
        return "Parallelism!$AE$5"

    shared = shared_guards(GUARDED, ROW, cell)
    assert set(cells) == {"Parallelism!$AE$5"}
    # the row's guard stays in the result; the three others are read from the shared cell
    text = shared.render(lambda v: v)
    assert text.startswith("IF(Parallelism!$AE$5=0,IF(Checks!$G$9=\"OK\"") and "ISNUMBER" not in text
    seen = set()
    for a, check, b, row_check in itertools.product((3, "no figure", True), ("OK", "too big"), (2, "msg", True),
                                                      ("OK", "refused")):
        env = {"a": a, "b": b, "Checks!$C$1": check, "Checks!$G$9": row_check, "Parallelism!$A$5": 4}
        env["Parallelism!$AE$5"] = cells["Parallelism!$AE$5"].evaluate(env)
        expected = GUARDED.evaluate(env)
        seen.add(expected if not isinstance(expected, (int, float)) or isinstance(expected, bool) else "number")
        assert shared.evaluate(env) == expected, env
    # every branch was met: each failing guard's value and the result
    assert seen >= {"no figure", True, "see Start", "msg", "see row", "number"}


def test_a_result_without_shareable_guards_stays_as_it_is():
    inner = _if(eq(Var("Checks!$G$9"), "OK"), Var("Parallelism!$A$5") * 2, Text("see row"))
    assert shared_guards(inner, ROW, lambda tests: "unused") is inner

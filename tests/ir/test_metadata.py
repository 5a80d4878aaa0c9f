"""``ir/metadata.py``: metadata nodes as objects -- parsing tricky node text, printing
it back, the module helpers the AD pass builds alias scopes with, debug locations
read through it, and a round trip over every numbered node of real clang output (C
with debug info and TBAA, C++ with exceptions)."""

from __future__ import annotations

import subprocess

import pytest

from enzyme_py.ir import parse_module
from enzyme_py.ir import metadata as md

from test_attributes import _clang


@pytest.mark.parametrize("text,operands", [
    ('!{!"double", !5, i64 0}', (md.MDString("double"), md.MDRef(5), md.MDValue("i64", "0"))),
    ("!{}", ()),
    ('!{!"a, b", !{!"inner", i32 1}}',
     (md.MDString("a, b"), md.MDNode((md.MDString("inner"), md.MDValue("i32", "1"))))),
    ('!{i64 0, i64 8, !7, i64 8, i64 4, !9}',
     (md.MDValue("i64", "0"), md.MDValue("i64", "8"), md.MDRef(7),
      md.MDValue("i64", "8"), md.MDValue("i64", "4"), md.MDRef(9))),
    ('!{!"llvm.loop.mustprogress"}', (md.MDString("llvm.loop.mustprogress"),)),
    ("!{ptr @f, null}", (md.MDValue("ptr", "@f"), md.MDRaw("null"))),
])
def test_generic_nodes(text, operands):
    n = md.MDNode.parse(text)
    assert n is not None and n.operands == operands and not n.distinct
    assert str(n) == text


def test_strings_with_escapes_round_trip():
    text = '!{!"quote \\22 backslash \\5C tab \\09 caf\\C3\\A9"}'
    n = md.MDNode.parse(text)
    assert n.operands[0].value == 'quote " backslash \\ tab \t café'
    assert str(n) == text


def test_distinct_and_specialized_nodes():
    n = md.parse('distinct !{!3, !"enzyme_py.cache"}')
    assert isinstance(n, md.MDNode) and n.distinct and n.refs() == [3]
    assert str(n) == 'distinct !{!3, !"enzyme_py.cache"}'
    loc = md.parse('!DILocation(line: 12, column: 7, scope: !40, inlinedAt: !41)')
    assert isinstance(loc, md.MDSpecialized) and loc.kind == "DILocation"
    assert (loc.get("line"), loc.get("column"), loc.get("scope")) == ("12", "7", "!40")
    f = md.parse('!DIFile(filename: "dir, with (parens)/a.c", directory: "/tmp")')
    assert f.get("filename") == '"dir, with (parens)/a.c"'
    assert str(f) == '!DIFile(filename: "dir, with (parens)/a.c", directory: "/tmp")'
    # not metadata node syntax at all
    assert md.parse("i32 7") is None and md.MDNode.parse("!DIExpression()") is None


def test_module_helpers_build_alias_scopes():
    m = parse_module('define void @f() {\n  ret void\n}\n')
    dom = md.add_self_referencing(m, md.MDString("dom"))
    scope = md.add_self_referencing(m, dom, md.MDString("scope"))
    lst = md.add(m, md.MDNode((scope,)))
    assert m.metadata[str(dom.number)] == f'distinct !{{!{dom.number}, !"dom"}}'
    assert m.metadata[str(scope.number)] == \
        f'distinct !{{!{scope.number}, !{dom.number}, !"scope"}}'
    assert md.node(m, str(lst)).refs() == [scope.number]
    assert md.node(m, lst) == md.MDNode((scope,))
    assert md.node(m, "!999") is None and md.node(m, "!DILocation(line: 1)") is None



def test_loop_id_without_locations():
    """A loop's ``!llvm.loop`` node as copied into a function without debug info: its
    properties, not the DILocations that name the original function."""
    m = parse_module(
        'define void @f() !dbg !1 {\n  ret void\n}\n'
        '!1 = distinct !DISubprogram(name: "f")\n'
        '!2 = !DILocation(line: 4, column: 3, scope: !1)\n'
        '!3 = !{!"llvm.loop.mustprogress"}\n'
        '!4 = distinct !{!4, !2, !DILocation(line: 6, column: 1, scope: !1), !3, '
        '!{!"llvm.loop.vectorize.width", i32 4}}\n'
        '!5 = distinct !{!5, !3}\n')
    ref = md.loop_id_without_locations(m, "!4")
    assert ref != "!4"
    n = md.node(m, ref)
    assert n.distinct and n.operands[0] == md.MDRef(int(ref[1:]))
    assert n.operands[1:] == (md.MDRef(3), md.MDNode((md.MDString("llvm.loop.vectorize.width"),
                                                      md.MDValue("i32", "4"))))
    assert md.loop_id_without_locations(m, "!5") == "!5"      # nothing to drop
    assert md.loop_id_without_locations(m, "!3") == "!3"      # not a loop id

C_SOURCE = r"""
struct P { double x; float y; int n; double *d; };
double f(struct P *p, struct P *q, int n) {
    double s = 0;
    *q = *p;                       /* tbaa.struct */
    for (int i = 0; i < n; i++)    /* llvm.loop */
        s += p->d[i] * q->y + p->n;
    return s;
}
"""

CXX_SOURCE = r"""
#include <stdexcept>
#include <vector>
double g(std::vector<double> &v) {
    if (v.empty()) throw std::runtime_error("empty, \"quoted\"");
    double s = 0;
    for (double x : v) s += x;
    return s;
}
"""


@pytest.mark.parametrize("lang,source,flags", [
    ("c", C_SOURCE, ["-O2", "-g"]), ("c++", CXX_SOURCE, ["-O1", "-g", "-fexceptions"])],
    ids=["c", "cxx"])
def test_round_trip_clang_output(tmp_path, lang, source, flags):
    src = tmp_path / ("t.c" if lang == "c" else "t.cpp")
    src.write_text(source)
    out = tmp_path / "t.ll"
    subprocess.run(_clang(lang) + flags + ["-S", "-emit-llvm", str(src), "-o", str(out)],
                   check=True, capture_output=True)
    m = parse_module(out.read_text(), lazy=False)
    kinds = {"generic": 0, "specialized": 0, "other": 0}
    for key, text in m.metadata.items():
        n = md.parse(text)
        if n is None:
            kinds["other"] += 1   # e.g. !DIExpression(DW_OP_...): not modelled, kept as text
            continue
        kinds["generic" if isinstance(n, md.MDNode) else "specialized"] += 1
        assert str(n) == text.strip(), f"!{key}"
        assert md.parse(str(n)) == n
    assert kinds["generic"] >= 5 and kinds["specialized"] >= 5, kinds
    # what the AD pass reads through it: TBAA kinds and debug locations
    from enzyme_py.analysis.types import tbaa_kind
    from enzyme_py.ir.instructions import Load
    fn = next(f for f in m.functions if not f.is_declaration)
    loads = [i for i in fn.instructions() if isinstance(i, Load)]
    assert {tbaa_kind(i) for i in loads} & {"double", "ptr"}
    located = [m.debug_location(i.get_metadata("dbg")) for i in loads
               if i.get_metadata("dbg")]
    assert all(loc[1] > 0 for loc in located)   # (C++: some come from inlined headers)
    assert any(loc[0].endswith(src.name) and loc[1] > 1 for loc in located)

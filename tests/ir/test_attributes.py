"""``ir/attributes.py``: the tokenizer on tricky attribute text, the queries and edits,
group resolution and registration on a parsed module, and a round trip over every
attribute text of real clang output (C, and C++ with exceptions)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from enzyme_py.ir import parse_module, print_module
from enzyme_py.ir.attributes import Attributes, Token, add_group, resolved, stripped
from enzyme_py.ir.instructions import Call, Invoke


def toks(text):
    return [tuple(t) for t in Attributes.parse(text)]


@pytest.mark.parametrize("text,expected", [
    ("nounwind", [("word", "nounwind", None, "nounwind")]),
    ("memory(argmem: readwrite, inaccessiblemem: read)",
     [("word", "memory", "argmem: readwrite, inaccessiblemem: read",
       "memory(argmem: readwrite, inaccessiblemem: read)")]),
    ("dereferenceable(16)", [("word", "dereferenceable", "16", "dereferenceable(16)")]),
    ("allocsize(0,1)", [("word", "allocsize", "0,1", "allocsize(0,1)")]),
    ("nofpclass(nan inf)", [("word", "nofpclass", "nan inf", "nofpclass(nan inf)")]),
    ("initializes((0, 8), (16, 24))",
     [("word", "initializes", "(0, 8), (16, 24)", "initializes((0, 8), (16, 24))")]),
    ("byval(%struct.S)", [("word", "byval", "%struct.S", "byval(%struct.S)")]),
    ('sret(%"class.std::pair<int, (anon)>")',
     [("word", "sret", '%"class.std::pair<int, (anon)>"',
       'sret(%"class.std::pair<int, (anon)>")')]),
    ("range(i32 0, 10)", [("word", "range", "i32 0, 10", "range(i32 0, 10)")]),
    ("uwtable(sync)", [("word", "uwtable", "sync", "uwtable(sync)")]),
    ('allockind("alloc,uninitialized")',
     [("word", "allockind", '"alloc,uninitialized"', 'allockind("alloc,uninitialized")')]),
    ("align 8", [("word", "align", "8", "align 8")]),
    ("alignstack(8)", [("word", "alignstack", "8", "alignstack(8)")]),
    ("align=8 alignstack=16", [("word", "align", "8", "align=8"),
                               ("word", "alignstack", "16", "alignstack=16")]),
    ("align 8 noundef", [("word", "align", "8", "align 8"),
                         ("word", "noundef", None, "noundef")]),
    ("#3", [("group", "3", None, "#3")]),
    ("#3 #12", [("group", "3", None, "#3"), ("group", "12", None, "#12")]),
    ('"no-trapping-math"="true"',
     [("string", "no-trapping-math", "true", '"no-trapping-math"="true"')]),
    ('"enzyme_py"', [("string", "enzyme_py", None, '"enzyme_py"')]),
    ('"a nounwind #1 (x" "k"="v) #2 nounwind("',
     [("string", "a nounwind #1 (x", None, '"a nounwind #1 (x"'),
      ("string", "k", "v) #2 nounwind(", '"k"="v) #2 nounwind("')]),
    ("local_unnamed_addr #0 comdat personality ptr @__gxx_personality_v0",
     [("word", "local_unnamed_addr", None, "local_unnamed_addr"),
      ("group", "0", None, "#0"), ("word", "comdat", None, "comdat"),
      ("other", "personality", "ptr @__gxx_personality_v0",
       "personality ptr @__gxx_personality_v0")]),
    ("comdat($_Z1fv) align 16", [("word", "comdat", "$_Z1fv", "comdat($_Z1fv)"),
                                 ("word", "align", "16", "align 16")]),
    ('section ".text.nounwind" #1', [("other", "section", ".text.nounwind",
                                      'section ".text.nounwind"'), ("group", "1", None, "#1")]),
    ('gc "statepoint-example" partition "p"',
     [("other", "gc", "statepoint-example", 'gc "statepoint-example"'),
      ("other", "partition", "p", 'partition "p"')]),
    ("!dbg !12", [("other", "", None, "!dbg"), ("other", "", None, "!12")]),
    ('prefix [2 x i8] c"a b" prologue i32 ptrtoint (ptr @f to i32) nounwind',
     [("other", "prefix", '[2 x i8] c"a b"', 'prefix [2 x i8] c"a b"'),
      ("other", "prologue", "i32 ptrtoint (ptr @f to i32)",
       "prologue i32 ptrtoint (ptr @f to i32)"),
      ("word", "nounwind", None, "nounwind")]),
    ('personality ptr @"a b#1" nounwind',
     [("other", "personality", 'ptr @"a b#1"', 'personality ptr @"a b#1"'),
      ("word", "nounwind", None, "nounwind")]),
    ("", []),
])
def test_tokens(text, expected):
    assert toks(text) == expected
    assert str(Attributes.parse(text)) == text


@pytest.mark.parametrize("text", [
    "{ nounwind }",
    '{ mustprogress noinline nounwind optnone uwtable "frame-pointer"="all" '
    '"target-cpu"="x86-64" }',
    "{ nounwind allocsize(0,1) memory(argmem: read) }",
    "{ }",
])
def test_group_text(text):
    a = Attributes.parse(text)
    assert a.braced
    assert str(a) == text
    assert all(t.kind != "other" for t in a)


def test_group_spacing_normalised():
    assert str(Attributes.parse("{nounwind   memory(none)}")) == "{ nounwind memory(none) }"
    assert str(Attributes.parse("  nounwind\t#2 ")) == "nounwind #2"


@pytest.mark.parametrize("text", ['"a', "memory(argmem: read", 'byval(%"x)'])
def test_malformed(text):
    with pytest.raises(ValueError):
        Attributes.parse(text)


QUOTED = '"x nounwind" "#1"="nounwind (optnone)" "comdat" readonly'


def test_queries():
    a = Attributes.parse('noalias nocapture noundef readonly align 8 dereferenceable(16) '
                         '#4 "k"="v" "flag"')
    assert a.has("noalias") and a.has("align") and a.has("dereferenceable")
    assert not a.has("nonnull") and not a.has("k") and not a.has("4")
    assert a.arg("align") == "8"
    assert a.arg("dereferenceable") == "16"
    assert a.arg("noalias") is None and a.arg("nonnull") is None
    assert a.groups == ("4",)
    assert a.strings == {"k": "v", "flag": None}
    assert a.words == ("noalias", "nocapture", "noundef", "readonly", "align",
                       "dereferenceable")


def test_quoted_text_is_no_attribute():
    a = Attributes.parse(QUOTED)
    assert not a.has("nounwind") and not a.has("optnone") and not a.has("comdat")
    assert a.has("readonly")
    assert a.groups == ()
    assert a.strings == {"x nounwind": None, "#1": "nounwind (optnone)", "comdat": None}
    assert str(a.without("nounwind", "optnone", "comdat")) == QUOTED


def test_align_forms():
    assert Attributes.parse("align 8").arg("align") == "8"
    assert Attributes.parse("{ align=8 }").arg("align") == "8"
    a = Attributes.parse("alignstack(8)")
    assert a.arg("alignstack") == "8" and not a.has("align")
    assert not Attributes.parse("align 8").has("alignstack")


def test_without():
    a = Attributes.parse('{ mustprogress noinline nounwind optnone uwtable(sync) '
                         'memory(argmem: read) "enzyme_py" "optnone"="x" }')
    b = a.without("optnone", "noinline", "memory", "uwtable")
    assert str(b) == '{ mustprogress nounwind "enzyme_py" "optnone"="x" }'
    assert str(a.without('"enzyme_py"')) == ('{ mustprogress noinline nounwind optnone '
                                              'uwtable(sync) memory(argmem: read) '
                                              '"optnone"="x" }')
    assert a.without("cold") is a           # nothing to drop: the same object
    assert str(a) != str(b)                 # immutable


def test_with():
    a = Attributes.parse("#3 nounwind")
    assert str(a.with_("memory(none)")) == "#3 nounwind memory(none)"
    assert a.with_("nounwind") is a
    assert str(a.with_("alwaysinline", "alwaysinline")) == "#3 nounwind alwaysinline"
    # a word with another argument is the same attribute: not added twice
    assert str(Attributes.parse("memory(read)").with_("memory(none)")) == "memory(read)"
    assert str(Attributes.parse('"k"="a"').with_('"k"="b"', '"j"')) == '"k"="a" "j"'
    assert str(Attributes.parse("{ }").with_('"enzyme_py"')) == '{ "enzyme_py" }'
    assert str(a.with_(Token("word", "cold", None, "cold"))) == "#3 nounwind cold"
    assert str(a | "cold #3 #4") == "#3 nounwind cold #4"


def test_replace_groups():
    a = Attributes.parse("local_unnamed_addr #1 comdat")
    assert str(a.replace_groups({"1": "7"})) == "local_unnamed_addr #7 comdat"
    assert a.replace_groups({"2": "7"}) is a
    assert a.replace_groups({"1": "7"}).groups == ("7",)


def test_comdat_removal_keeps_what_only_looks_like_it():
    """The regex this replaced (``\\bcomdat(\\(\\$[^)]*\\))?``) cut "comdat" out of a
    section name and a personality function's name."""
    a = Attributes.parse('local_unnamed_addr #0 section ".text.comdat" comdat($f) '
                         'personality ptr @comdat_personality')
    assert str(a.without("comdat")) == ('local_unnamed_addr #0 section ".text.comdat" '
                                        'personality ptr @comdat_personality')


MODULE = """\
define void @f() local_unnamed_addr #0 {
  call void @g() #2
  ret void
}

define void @h() #1 {
  ret void
}

declare void @g() nounwind

attributes #0 = { noinline nounwind optnone uwtable "target-cpu"="x86-64" }
attributes #1 = { nounwind uwtable "target-cpu"="x86-64" }
attributes #2 = { memory(none) "note"="noinline" }
"""


def test_resolved():
    m = parse_module(MODULE)
    f, g = m.get_function("f"), m.get_function("g")
    r = resolved(m, f.fn_attrs)
    assert str(r) == ('local_unnamed_addr noinline nounwind optnone uwtable '
                      '"target-cpu"="x86-64"')
    assert not r.braced and r.groups == ()
    assert resolved(m, g.fn_attrs).has("nounwind")
    call = next(i for i in f.instructions() if isinstance(i, Call))
    assert resolved(m, call.fn_attrs).arg("memory") == "none"
    assert not resolved(m, call.fn_attrs).has("noinline")
    assert str(resolved(m, "#1 #0 cold")) == ('cold nounwind uwtable "target-cpu"="x86-64" '
                                              'noinline optnone')
    assert str(resolved(m, "#9 cold")) == "cold"          # a missing group adds nothing
    assert str(resolved(None, "#0 cold")) == "cold"


def test_add_group_shares_identical_groups():
    m = parse_module(MODULE)
    n = len(m.attribute_groups)
    assert add_group(m, "nounwind uwtable \"target-cpu\"=\"x86-64\"") == "#1"
    assert add_group(m, Attributes.parse("{ memory(none) \"note\"=\"noinline\" }")) == "#2"
    assert len(m.attribute_groups) == n
    ref = add_group(m, "nounwind cold")
    assert ref == "#3" and m.attribute_groups["3"] == "{ nounwind cold }"
    assert add_group(m, "{ nounwind  cold }") == "#3"
    assert add_group(m, '"enzyme_py"') == "#4"
    assert add_group(m, "nounwind cold") == "#3"
    # groups the module gets otherwise are seen too
    m.attribute_groups["10"] = "{ hot }"
    assert add_group(m, "hot") == "#10"
    assert add_group(m, "cold") == "#11"
    out = print_module(m)
    assert "attributes #3 = { nounwind cold }" in out
    assert "attributes #11 = { cold }" in out


def test_stripped():
    m = parse_module(MODULE)
    f, h = m.get_function("f"), m.get_function("h")
    a = stripped(m, f.fn_attrs, "optnone", "noinline")
    assert str(a) == "local_unnamed_addr #1"    # what is left is group 1 itself
    # a group without them stays; inline words go
    assert stripped(m, h.fn_attrs, "optnone") == Attributes.parse("#1")
    c = stripped(m, "#0 noinline cold", "noinline")
    assert str(c) == "#3 cold"
    assert m.attribute_groups["3"] == '{ nounwind optnone uwtable "target-cpu"="x86-64" }'
    b = stripped(m, "#0", "optnone")
    assert m.attribute_groups[b.groups[0]] == ('{ noinline nounwind uwtable '
                                                '"target-cpu"="x86-64" }')
    assert stripped(m, "#0", "optnone") == b                    # shared
    assert m.attribute_groups["0"].startswith("{ noinline nounwind optnone")  # unchanged


# -- round trip over real clang output ------------------------------------------------

C_SOURCE = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>
struct S { double a[8]; };
__attribute__((noinline)) double h(struct S s) { return s.a[1]; }
__attribute__((alloc_size(1, 2))) void *my_alloc(size_t n, size_t size);
__attribute__((section(".text.comdat"), cold)) int rare(int *p) { return *p + 1; }
double f(double *restrict x, const double *y, int n) {
    double *p = my_alloc(n, 8);
    memcpy(p, y, n * sizeof *p);
    double s = 0;
    for (int i = 0; i < n; i++) s += exp(p[i]) * x[i];
    struct S t = {0};
    return s + h(t);
}
"""

CXX_SOURCE = r"""
#include <stdexcept>
#include <string>
#include <vector>
struct S { double a[4]; };
static double g(S s) { return s.a[0]; }
template <class T> T twice(const T &x) { return x + x; }
double f(const std::vector<double> &v, int n) {
    if (n < 0) throw std::runtime_error("negative");
    double s = 0;
    for (double x : v) s += x;
    S q{};
    q.a[0] = s;
    try {
        return g(q) + std::stod(std::to_string(twice(s)));
    } catch (const std::exception &) {
        return 0;
    }
}
"""


def _clang(lang):
    exe = shutil.which("clang-22")
    if exe:
        return [exe]
    from enzyme_py.driver.clang import find_clang
    try:
        found = find_clang()
    except Exception as e:              # no clang at all
        pytest.skip(f"no clang: {e}")
    return list(found.cxx if lang == "c++" else found.cc)   # zig c++: libc++'s headers


def _texts(module):
    """Every attribute text of the module, with what it belongs to."""
    for fn in module.functions:
        yield f"@{fn.name}", fn.fn_attrs
        for a in fn.args:
            yield f"@{fn.name} argument {a.index}", a.attrs
        if fn.is_declaration:
            continue
        for inst in fn.instructions():
            if isinstance(inst, (Call, Invoke)):
                yield f"call in @{fn.name}", inst.fn_attrs
                yield f"call in @{fn.name} (return)", inst.ret_attrs
                for k, t in enumerate(inst.arg_attrs):
                    yield f"call in @{fn.name} (argument {k})", t
    for k, v in module.attribute_groups.items():
        yield f"#{k}", v


@pytest.mark.parametrize("lang,source", [("c", C_SOURCE), ("c++", CXX_SOURCE)],
                         ids=["c", "cxx"])
def test_round_trip_clang_output(tmp_path, lang, source):
    src = tmp_path / ("t.c" if lang == "c" else "t.cpp")
    src.write_text(source)
    out = tmp_path / "t.ll"
    subprocess.run(_clang(lang) + ["-O1", "-S", "-emit-llvm", "-fexceptions", str(src),
                               "-o", str(out)], check=True, capture_output=True)
    m = parse_module(out.read_text(), lazy=False)
    seen = {"word": set(), "group": 0, "string": 0}
    for what, text in _texts(m):
        a = Attributes.parse(text)
        printed = str(a)
        again = Attributes.parse(printed)
        assert again == a, what
        assert str(again) == printed, what
        assert " ".join(printed.split()) == " ".join((text or "").split()), what
        for t in a:
            assert t.kind != "other" or t.name in ("personality", "section"), (what, t)
            if t.kind == "word":
                seen["word"].add(t.name)
            elif t.kind in seen:
                seen[t.kind] += 1
    assert seen["group"] and seen["string"]
    assert {"nounwind", "noundef", "memory"} <= seen["word"]
    if lang == "c++":
        assert {"uwtable", "local_unnamed_addr", "align", "dereferenceable"} <= seen["word"]
        if shutil.which("clang-22"):   # (libstdc++'s inline members; zig's libc++ has none)
            assert "comdat" in seen["word"]
            assert any(Attributes.parse(fn.fn_attrs).has("comdat") for fn in m.functions)
        assert " personality ptr @__gxx_personality_v0" in print_module(m)
    else:
        assert {"allocsize", "byval", "noalias"} <= seen["word"]
        rare = Attributes.parse(m.get_function("rare").fn_attrs)
        assert not rare.has("comdat")
        assert any(t.name == "section" and t.arg == ".text.comdat" for t in rare)
        assert str(rare.without("comdat")) == str(rare)

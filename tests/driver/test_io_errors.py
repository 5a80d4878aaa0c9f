"""enzyme-cc when files cannot be read or written: one clang-style line naming the
file and the system's reason, exit 1, no traceback, and nothing left behind (no
output, no half-written file, no temporary).  Internal errors (a bug of EnzymePy)
are told apart: exit 70 and a request to report it."""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import stat
import subprocess
import sys

import pytest

OK = "#include <stdio.h>\nint main(void) { puts(\"ok\"); return 0; }\n"


@pytest.fixture
def work(tmp_path):
    """A build directory with ok.c, and a private TMPDIR (checked empty at the end)."""
    d = tmp_path / "w"
    d.mkdir()
    (d / "ok.c").write_text(OK)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    yield d, tmp
    assert os.listdir(tmp) == [], "temporary files left behind"


def run(cmd, cwd, tmp, preexec=None):
    env = dict(os.environ, TMPDIR=str(tmp))
    env.pop("ENZYME_DEBUG", None)
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, preexec_fn=preexec)


def _one_error(proc, line):
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stderr == f"enzyme-cc: error: {line}\n", proc.stderr
    assert "Traceback" not in proc.stderr


def _drop_root_file_access():
    """In the child: without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH, root obeys file
    permissions like everybody else (dropped from the bounding set, they are gone
    after the exec)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):   # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:   # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture(scope="session")
def permissions_apply():
    """Whether file permissions can be made to bind the enzyme-cc we run."""
    if os.geteuid() != 0:
        return True
    try:
        p = subprocess.run(["sh", "-c", "exec cat /proc/self/status"], capture_output=True,
                           text=True, preexec_fn=_drop_root_file_access, timeout=30)
    except subprocess.SubprocessError:
        return False
    for line in p.stdout.splitlines():
        if line.startswith("CapEff:"):
            return not int(line.split()[1], 16) & 0b110
    return False


def _needs_permissions(ok):
    if not ok:
        if os.environ.get("CI"):
            pytest.fail("running as root and cannot drop CAP_DAC_OVERRIDE")
        pytest.skip("running as root and cannot drop CAP_DAC_OVERRIDE")


@pytest.mark.parametrize("compile_only", [False, True])
def test_output_directory_missing(work, ecc, compile_only):
    d, tmp = work
    out = "nodir/out.o" if compile_only else "nodir/out"
    p = run([ecc, *(["-c"] if compile_only else []), "ok.c", "-o", out], d, tmp)
    _one_error(p, f"cannot open output file {out}: No such file or directory")
    assert sorted(os.listdir(d)) == ["ok.c"]


def test_output_is_a_directory(work, ecc):
    d, tmp = work
    (d / "out").mkdir()
    p = run([ecc, "ok.c", "-o", "out"], d, tmp)
    _one_error(p, "cannot open output file out: Is a directory")
    assert sorted(os.listdir(d)) == ["ok.c", "out"] and os.listdir(d / "out") == []


@pytest.mark.parametrize("compile_only", [False, True])
def test_read_only_output_directory(work, ecc, permissions_apply, compile_only):
    _needs_permissions(permissions_apply)
    d, tmp = work
    ro = d / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    out = "ro/out.o" if compile_only else "ro/out"
    try:
        p = run([ecc, *(["-c"] if compile_only else []), "ok.c", "-o", out], d, tmp,
                preexec=_drop_root_file_access)
        _one_error(p, f"cannot open output file {out}: Permission denied")
        assert os.listdir(ro) == []
    finally:
        ro.chmod(0o755)


def test_unreadable_inputs(work, ecc, permissions_apply):
    _needs_permissions(permissions_apply)
    d, tmp = work
    assert run([ecc, "-c", "ok.c", "-o", "ok.o"], d, tmp).returncode == 0
    shutil.copy(d / "ok.o", d / "secret.o")
    subprocess.run(["ar", "rcs", str(d / "libsecret.a"), str(d / "ok.o")], check=True)
    (d / "secret.rsp").write_text("ok.c -o x\n")
    shutil.copy(d / "ok.c", d / "secret.c")
    for name in ("secret.o", "libsecret.a", "secret.rsp", "secret.c"):
        (d / name).chmod(0)
    try:
        p = run([ecc, "secret.o", "-o", "x"], d, tmp, preexec=_drop_root_file_access)
        _one_error(p, "cannot read input file secret.o: Permission denied")
        p = run([ecc, "ok.c", "libsecret.a", "-o", "x"], d, tmp,
                preexec=_drop_root_file_access)
        _one_error(p, "cannot read input file libsecret.a: Permission denied")
        p = run([ecc, "ok.c", "-L.", "-lsecret", "-o", "x"], d, tmp,
                preexec=_drop_root_file_access)
        _one_error(p, "cannot read archive ./libsecret.a: Permission denied")
        p = run([ecc, "@secret.rsp"], d, tmp, preexec=_drop_root_file_access)
        _one_error(p, "cannot read response file 'secret.rsp': Permission denied")
        for mode in ([], ["-c"]):   # a source: the same message whichever clang compiles
            p = run([ecc, *mode, "secret.c", "-o", "x"], d, tmp, preexec=_drop_root_file_access)
            _one_error(p, "cannot read input file secret.c: Permission denied")
        assert not (d / "x").exists()
    finally:
        for name in ("secret.o", "libsecret.a", "secret.rsp", "secret.c"):
            (d / name).chmod(0o644)


def _big_table_program(n=6000) -> str:
    vals = ", ".join(f"{(k * 0.6180339887498949) % 1.0!r}" for k in range(1, n + 1))
    return ("#include <stdio.h>\n"
            f"static const double table[{n}] = {{{vals}}};\n"
            "int main(int c, char **v) { printf(\"%g\\n\", table[c * 7]); return 0; }\n")


def _drop_kept_temporaries(tmp):
    """-save-temps keeps enzyme-cc's temporary directory (that is what it is for)."""
    kept = os.listdir(tmp)
    assert len(kept) <= 1 and all(k.startswith("enzyme-cc-") for k in kept), kept
    for k in kept:
        shutil.rmtree(tmp / k)


def _file_size_limit(nbytes):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return set_limit


def test_file_size_limit_while_writing_our_files(work, ecc):
    """The bitcode (about 50 KB) fits under the limit, the merged IR that -save-temps
    writes (text, about 150 KB) does not: EnzymePy's own write fails (EFBIG)."""
    d, tmp = work
    (d / "big.c").write_text(_big_table_program())
    p = run([ecc, "-save-temps", "big.c", "-o", "big"], d, tmp,
            preexec=_file_size_limit(100 << 10))
    _one_error(p, "cannot write big.merged.ll: File too large")
    assert sorted(os.listdir(d)) == ["big.c", "ok.c"]   # no half-written IR
    _drop_kept_temporaries(tmp)


def test_file_size_limit_while_linking(work, ecc):
    """The linker's output exceeds the limit: clang reports it, enzyme-cc exits 1 and
    leaves no output."""
    d, tmp = work
    p = run([ecc, "ok.c", "-o", "out"], d, tmp, preexec=_file_size_limit(4 << 10))
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    assert sorted(os.listdir(d)) == ["ok.c"]


def test_full_disk(work, ecc):
    """A small tmpfs (mounted in a private mount namespace where that is allowed)."""
    d, tmp = work
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        pytest.skip("needs Linux mount namespaces (unshare)")
    (d / "big.c").write_text(_big_table_program())
    # 16 KB of table: an executable no clang (ziglang's links small ones) fits in 8 KB
    (d / "mid.c").write_text(_big_table_program(2000))
    (d / "small").mkdir()
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs "
                            + str(d / "small")], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.strip()}")
    script = (f'mount -t tmpfs -o size=8k tmpfs small && cd small && '
              f'"{ecc}" ../mid.c -o out; echo "rc=$?"; ls -A; '
              f'"{ecc}" -save-temps ../big.c -o big; echo "rc=$?"; ls -A')
    p = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=d, capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, TMPDIR=str(tmp)))
    assert p.stdout == "rc=1\nrc=1\n", (p.stdout, p.stderr)   # and nothing left in small/
    assert "No space left on device" in p.stderr
    assert "enzyme-cc: error: cannot write big.merged.ll: No space left on device" \
        in p.stderr.splitlines()
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    _drop_kept_temporaries(tmp)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_output_permissions_follow_the_umask(work, ecc, mask):
    d, tmp = work
    p = run([ecc, "ok.c", "-o", "exe"], d, tmp, preexec=lambda: os.umask(mask))
    assert p.returncode == 0, p.stderr
    p = run([ecc, "-c", "ok.c", "-o", "obj.o"], d, tmp, preexec=lambda: os.umask(mask))
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(os.stat(d / "exe").st_mode) == 0o777 & ~mask
    assert stat.S_IMODE(os.stat(d / "obj.o").st_mode) == 0o666 & ~mask


_UMASK_PROBE = """
import os, sys
import enzyme_py.driver.main
m = sys.modules["enzyme_py.driver.main"]
def no(*a):
    raise AssertionError("os.umask called")
os.umask = no
print(oct(m._umask()), oct(m._umask(status="/nonexistent/status")))
"""


@pytest.mark.parametrize("mask", [0o002, 0o027])
def test_umask_is_read_without_setting_it(tmp_path, mask):
    """``_umask`` never calls ``os.umask`` (which sets the mask: not thread-safe), on
    Linux (/proc/self/status) and with the fallback (the mode a new file gets)."""
    plugin = os.path.join(os.path.dirname(__file__), "..", "..", "plugin")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(plugin), TMPDIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", _UMASK_PROBE], env=env, capture_output=True,
                       text=True, timeout=60, preexec_fn=lambda: os.umask(mask))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [oct(mask), oct(mask)]
    assert os.listdir(tmp_path) == []


def test_internal_error_is_not_a_user_error(tmp_path, monkeypatch, capsys):
    """An invariant of the AD pass that fails (here: the reverse sweep asked for the
    shadow of an argument that has none) is an internal error: exit 70 and a request
    to report it, not a diagnostic blaming the program."""
    from enzyme_py.ad import reverse
    from enzyme_py.driver.main import main
    from enzyme_py.ir.values import Argument

    src = tmp_path / "p.c"
    src.write_text("#include <stdio.h>\n"
                   "double __enzyme_autodiff(void *, ...);\n"
                   "double f(double *x) { return x[0] * x[0]; }\n"
                   "int main(void) { double x = 3, dx = 0;\n"
                   "  __enzyme_autodiff((void *)f, &x, &dx); printf(\"%g\\n\", dx); }\n")
    real = reverse.ReverseGen.shadow

    def broken(self, p, b):
        if isinstance(p, Argument):
            self.sh_rev_args = {}
        return real(self, p, b)

    monkeypatch.setattr(reverse.ReverseGen, "shadow", broken)
    monkeypatch.delenv("ENZYME_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    rc = main([str(src), "-o", str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert rc == 70, err
    assert "enzyme-cc: error: internal error: argument without shadow" in err
    assert "this is a bug in EnzymePy, not in your program" in err
    assert "please report it" in err
    assert "Traceback" not in err
    assert not (tmp_path / "p").exists()

"""Kernel cache integrity and trust (threat model in docs/dev/kernel_cache.md).

Every generated artefact (kernel source, compiled code object) carries a sha256 record written
with it; an artefact that fails its check, cannot be executed, or sits in a directory / file that
others could have written is discarded and rebuilt with one warning - never executed.
"""

from __future__ import annotations

import gc
import os
import pickle
import random
import stat
import sys
import warnings

import numpy as np
import pytest

from nhcontrol._util.errors import CacheError, CacheIntegrityError
from nhcontrol.compiled import cache as C
from nhcontrol.compiled.model import _REGISTRY, load_compiled
from nhcontrol.modeling import examples

X = [0.1, 0.2, 0.3]


@pytest.fixture(scope="module")
def reference_M():
    return examples.sleigh().compile(cache=False).M(X).copy()


def _compile(cache_dir):
    return examples.sleigh().compile(cache_dir=cache_dir)


def _rebuilt_with_one_warning(cache_dir, reference_M, match="ignoring unusable kernel cache file"):
    with pytest.warns(RuntimeWarning, match=match) as rec:
        cm = _compile(cache_dir)
    assert len([w for w in rec if issubclass(w.category, RuntimeWarning)]) == 1
    assert not cm.from_cache
    np.testing.assert_array_equal(cm.M(X), reference_M)
    return cm


def _owned_by_another_user(monkeypatch, call, path):
    """Make ``os.<call>`` (``"stat"`` or ``"lstat"``) report ``path`` owned by another uid."""
    real, target = getattr(os, call), os.fspath(path)

    def fake(p, *a, **k):
        st = real(p, *a, **k)
        if os.fspath(p) == target:
            fields = list(st)
            fields[stat.ST_UID] = st.st_uid + 4242
            return os.stat_result(fields)
        return st

    monkeypatch.setattr(os, call, fake)


def _warm_is_clean(cache_dir, reference_M):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm = _compile(cache_dir)
    assert cm.from_cache
    np.testing.assert_array_equal(cm.M(X), reference_M)


def test_cache_directory_is_created_private_and_every_artefact_recorded(tmp_path, reference_M):
    d = tmp_path / "a" / "cache"
    cm = _compile(d)
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    arts = sorted(p.name for p in d.iterdir() if p.suffix in (".py", ".marshal"))
    assert len(arts) == 2  # the kernel source and its compiled code object
    for name in arts:
        C.verify_artefact(d / name)
        assert (d / (name + C.RECORD_SUFFIX)).exists()
        assert stat.S_IMODE((d / name).stat().st_mode) & 0o077 == 0
    assert cm.source_path.parent == d
    _warm_is_clean(d, reference_M)


def test_missing_parents_are_created_private_even_with_a_permissive_umask(tmp_path, reference_M):
    old = os.umask(0o002)  # a user-private-group umask: mkdir would give group write
    try:
        d = tmp_path / "p1" / "p2" / "cache"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cm = _compile(d)
    finally:
        os.umask(old)
    assert cm.source_path.parent == d
    for q in (d, d.parent, d.parent.parent):
        assert stat.S_IMODE(q.stat().st_mode) == 0o700


def test_one_digit_changed_in_the_cached_kernel_is_refused(tmp_path, reference_M):
    cm = _compile(tmp_path)
    src = cm.source_path.read_text()
    i = next(i for i, ch in enumerate(src) if ch.isdigit() and i > len(src) // 2)
    cm.source_path.write_text(src[:i] + str((int(src[i]) + 1) % 10) + src[i + 1:])
    _rebuilt_with_one_warning(tmp_path, reference_M)
    _warm_is_clean(tmp_path, reference_M)


def test_garbage_in_the_cached_kernel_is_refused(tmp_path, reference_M):
    cm = _compile(tmp_path)
    cm.source_path.write_bytes(b"\x00\xffimport os; os._exit(3)\n" * 10)
    _rebuilt_with_one_warning(tmp_path, reference_M)
    _warm_is_clean(tmp_path, reference_M)


def test_garbage_in_the_cached_code_object_is_refused(tmp_path, reference_M):
    cm = _compile(tmp_path)
    (code,) = tmp_path.glob("*.marshal")
    code.write_bytes(b"\xe3" + os.urandom(2000))
    sys.modules.pop(f"_nhcontrol_kernels_{cm.model_hash[:24]}")  # as in a new process
    with pytest.warns(RuntimeWarning, match="discarded the unusable compiled kernel cache file") as rec:
        cm2 = _compile(tmp_path)
    assert len(rec) == 1 and cm2.from_cache  # the verified source is compiled again
    np.testing.assert_array_equal(cm2.M(X), reference_M)
    C.verify_artefact(code)  # rewritten with its record
    sys.modules.pop(f"_nhcontrol_kernels_{cm.model_hash[:24]}")
    _warm_is_clean(tmp_path, reference_M)


def test_truncation_at_any_offset_is_detected_before_use(tmp_path, reference_M):
    cm = _compile(tmp_path)
    src_path = cm.source_path
    (code,) = [p for p in tmp_path.iterdir() if p.suffix == ".marshal"]
    rng = random.Random(8)
    for f in (src_path, code):
        data = f.read_bytes()
        for cut in rng.sample(range(len(data)), 60):
            f.write_bytes(data[:cut])
            with pytest.raises(CacheIntegrityError, match=r"fails its integrity check.*truncated"):
                C.verify_artefact(f)
        f.write_bytes(data)
        C.verify_artefact(f)
    # end to end: a truncated kernel source is discarded and rebuilt
    data = src_path.read_bytes()
    src_path.write_bytes(data[: len(data) * 2 // 3])
    _rebuilt_with_one_warning(tmp_path, reference_M)
    _warm_is_clean(tmp_path, reference_M)


@pytest.mark.parametrize("body", ["raise SystemExit(2)", "raise ImportError('planted')",
                                  "META = {'key': 'x'}", "def dynamics_terms_s(*a):\n    return a[99]\n"])
def test_module_that_fails_at_import_or_first_call_is_discarded(tmp_path, reference_M, body):
    """Even with a valid record (so the hash check passes), a module that raises at import,
    belongs to another key or fails at its first call is discarded and rebuilt."""
    cm = _compile(tmp_path)
    for p in list(tmp_path.glob("*.marshal*")):
        p.unlink()
    src = cm.source_path.read_text()
    if body.startswith("def "):
        cm.source_path.write_text(src + "\n" + body)  # overrides the real function
    else:
        cm.source_path.write_text(body + "\n" + src if "raise" in body else src + "\n" + body)
    C.record_artefact(cm.source_path)
    _rebuilt_with_one_warning(tmp_path, reference_M)
    _warm_is_clean(tmp_path, reference_M)


def test_artefact_writable_by_others_is_not_executed(tmp_path, reference_M):
    cm = _compile(tmp_path)
    os.chmod(cm.source_path, 0o666)
    _rebuilt_with_one_warning(tmp_path, reference_M, match="not trusted: it is writable by group/others")
    _warm_is_clean(tmp_path, reference_M)


def test_artefact_owned_by_another_user_is_not_executed(tmp_path, reference_M, monkeypatch):
    cm = _compile(tmp_path)
    _owned_by_another_user(monkeypatch, "lstat", cm.source_path)
    _rebuilt_with_one_warning(tmp_path, reference_M, match=r"not trusted: it is owned by uid \d+, not by you")


def test_symlinked_artefact_is_not_executed(tmp_path, reference_M):
    cm = _compile(tmp_path)
    elsewhere = tmp_path / "elsewhere.py"
    os.replace(cm.source_path, elsewhere)
    os.symlink(elsewhere, cm.source_path)
    _rebuilt_with_one_warning(tmp_path, reference_M, match="not a regular file")


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_directory_writable_by_others_is_not_used(tmp_path, reference_M, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    with pytest.warns(RuntimeWarning, match=r"shared: the kernel cache directory .* is not trusted: it is "
                                            r"writable by group/others.*private directory.*Fix") as rec:
        cm = _compile(shared)
        cm2 = _compile(shared)  # warned once only
    assert len(rec) == 1
    assert list(shared.iterdir()) == []  # nothing read from or written to the shared directory
    assert cm.source_path.parent != shared and stat.S_IMODE(cm.source_path.parent.stat().st_mode) == 0o700
    np.testing.assert_array_equal(cm2.M(X), reference_M)


def test_directory_owned_by_another_user_is_not_used(tmp_path, reference_M, monkeypatch):
    planted = tmp_path / "c"
    _compile(planted)
    _owned_by_another_user(monkeypatch, "stat", planted.resolve())
    assert "owned by uid" in C.directory_problem(planted)
    with pytest.warns(RuntimeWarning, match=r"c: the kernel cache directory .* is not trusted: it is owned "
                                            r"by uid \d+, not by you"):
        cm = _compile(planted)
    assert cm.source_path.parent == C.private_fallback_dir()
    np.testing.assert_array_equal(cm.M(X), reference_M)


def test_directory_below_a_parent_others_can_write_is_not_used(tmp_path):
    parent = tmp_path / "open"
    parent.mkdir()
    os.chmod(parent, 0o777)  # no sticky bit: others could rename the cache away and plant theirs
    (parent / "cache").mkdir(mode=0o700)
    assert "writable by group/others without the sticky bit" in C.directory_problem(parent / "cache")
    os.chmod(parent, 0o777 | stat.S_ISVTX)  # like /tmp
    assert C.directory_problem(parent / "cache") is None


def test_artefact_api_for_other_backends(tmp_path):
    """write/record/verify/discard work for any artefact (e.g. a shared library of a C backend)."""
    d = C.ensure_private_dir(tmp_path / "k")
    blob = bytes(range(256)) * 50
    digest = C.write_artefact(d / "lib.so", blob)
    assert C.verify_artefact(d / "lib.so") == blob and len(digest) == 64
    (d / "lib2.so").write_bytes(blob)  # produced by an external tool
    os.chmod(d / "lib2.so", 0o600)
    assert C.record_artefact(d / "lib2.so") == digest
    (d / "lib2.so").write_bytes(blob[:-1] + b"\x00")
    with pytest.raises(CacheIntegrityError, match="lib2.so fails its integrity check"):
        C.verify_artefact(d / "lib2.so")
    C.record_path(d / "lib.so").unlink()
    with pytest.raises(CacheIntegrityError, match=r"lib.so.sha256 is not trusted: it cannot be read"):
        C.verify_artefact(d / "lib.so")
    C.discard_artefact(d / "lib2.so")
    assert not (d / "lib2.so").exists() and not C.record_path(d / "lib2.so").exists()
    assert issubclass(CacheIntegrityError, CacheError) and issubclass(CacheIntegrityError, OSError)


def test_unpickling_never_executes_a_tampered_cache(tmp_path, reference_M):
    """load_compiled (the unpickling target) discards a tampered cached kernel and uses the
    hash-checked source the pickle carries."""
    cm = examples.sleigh().compile(cache=False)
    blob = pickle.dumps(cm)
    key, src, sha = cm.__reduce__()[1]
    d = tmp_path / "w"
    C.write_artefact(C.ensure_private_dir(d) / f"nhc_{key}.py", src)
    (d / f"nhc_{key}.py").write_text(src.replace("def ", "def  ", 1) + "raise SystemExit(1)\n")
    del cm  # nothing alive in the registry: the disk is consulted
    gc.collect()
    _REGISTRY.pop(key, None)
    with pytest.warns(RuntimeWarning, match="ignoring unusable kernel cache file"):
        cm2 = load_compiled(key, src, sha, cache_dir=d)
    np.testing.assert_array_equal(cm2.M(X), reference_M)
    # the carried source runs from memory; only mb.compile() writes kernels to the cache
    assert not (d / f"nhc_{key}.py").exists() and cm2.source_path is None and not cm2.from_cache
    assert blob


def test_pickling_uses_the_verified_bytes_not_the_file_on_disk(tmp_path, reference_M):
    """A cached kernel modified after it was loaded does not leak into a pickle."""
    cm = _compile(tmp_path)
    good = cm.source_path.read_text()
    cm.source_path.write_text(good.replace("META", "META_", 1))
    key, src, _sha = cm.__reduce__()[1]
    assert src == good

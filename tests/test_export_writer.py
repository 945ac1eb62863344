"""The one writer of user folders (`nhcontrol._util.staging.write_tree`): staging, a manifest of
what it wrote, no overwrite of a file it did not write without ``force``, no symbolic link
followed, one-line errors naming the path."""

from __future__ import annotations

import json
import os

import pytest

from nhcontrol._util.errors import ExportConflictError, ExportError
from nhcontrol._util.staging import MANIFEST, read_manifest, sha256_of, write_tree


def test_fresh_folder_written_with_manifest(tmp_path):
    out = tmp_path / "a" / "b"
    info = write_tree(out, {"x.c": "int x;\n", "sub/y.h": b"/* y */\n"})
    assert (out / "x.c").read_text() == "int x;\n"
    assert (out / "sub" / "y.h").read_bytes() == b"/* y */\n"
    assert info["files"] == ["x.c", "sub/y.h"] and info["replaced"] == []
    man = read_manifest(out)
    assert man == {"x.c": sha256_of(b"int x;\n"), "sub/y.h": sha256_of(b"/* y */\n")}
    # no staging folder left behind
    assert [p.name for p in tmp_path.iterdir()] == ["a"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]


def test_own_files_replaced_foreign_refused(tmp_path):
    write_tree(tmp_path, {"Makefile": "all:\n"})
    info = write_tree(tmp_path, {"Makefile": "all: x\n"})          # ours, unedited: replaced
    assert info["replaced"] == ["Makefile"]
    (tmp_path / "Makefile").write_text("my own rules\n")            # the user edits it
    with pytest.raises(ExportConflictError, match="Makefile") as err:
        write_tree(tmp_path, {"Makefile": "all: y\n", "new.c": "int y;\n"})
    assert "force" in str(err.value)
    assert (tmp_path / "Makefile").read_text() == "my own rules\n"
    assert not (tmp_path / "new.c").exists()                       # nothing written at all
    assert isinstance(err.value, FileExistsError) and isinstance(err.value, OSError)
    info = write_tree(tmp_path, {"Makefile": "all: y\n"}, force=True)
    assert (tmp_path / "Makefile").read_text() == "all: y\n" and info["replaced"] == ["Makefile"]


def test_foreign_file_with_identical_contents_is_not_a_conflict(tmp_path):
    (tmp_path / "x.c").write_text("same\n")
    info = write_tree(tmp_path, {"x.c": "same\n"})
    assert info["unchanged"] == ["x.c"] and read_manifest(tmp_path)["x.c"] == sha256_of(b"same\n")


def test_user_makefile_in_nonempty_folder_is_kept(tmp_path):
    (tmp_path / "Makefile").write_text("user\n")
    (tmp_path / "notes.txt").write_text("keep\n")
    with pytest.raises(ExportConflictError, match=r"Makefile"):
        write_tree(tmp_path, {"Makefile": "gen\n"})
    assert (tmp_path / "Makefile").read_text() == "user\n"
    write_tree(tmp_path, {"other.c": "x\n"})                       # unrelated files are fine
    assert (tmp_path / "notes.txt").read_text() == "keep\n"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
@pytest.mark.parametrize("force", [False, True])
def test_symlink_inside_target_never_followed(tmp_path, force):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside, out / "nhc_model.c")
    with pytest.raises(ExportError, match=r"nhc_model\.c \(a symbolic link\)"):
        write_tree(out, {"nhc_model.c": "evil\n"}, force=force)
    assert outside.read_text() == "precious\n"
    assert os.path.islink(out / "nhc_model.c")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_symlinked_subfolder_and_manifest_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(elsewhere, out / "sub")
    with pytest.raises(ExportError, match="sub"):
        write_tree(out, {"sub/a.h": "x\n"})
    assert list(elsewhere.iterdir()) == []
    os.symlink(tmp_path / "m.json", out / MANIFEST)
    with pytest.raises(ExportError, match=MANIFEST.replace(".", r"\.")):
        write_tree(out, {"a.h": "x\n"})
    assert not (tmp_path / "m.json").exists()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_target_that_is_a_link_to_a_folder_is_resolved_once(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    info = write_tree(tmp_path / "link", {"a.h": "x\n"})
    assert (real / "a.h").read_text() == "x\n" and info["directory"] == str(real.resolve())


def test_target_that_is_a_file(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("data\n")
    with pytest.raises(ExportError, match=r"file\.txt.*is a file, not a folder") as err:
        write_tree(f, {"a.h": "x\n"})
    assert "\n" not in str(err.value)
    assert f.read_text() == "data\n"


@pytest.mark.skipif(os.name != "posix" or (hasattr(os, "geteuid") and os.geteuid() == 0),
                    reason="permissions are not enforced for root / off POSIX")
def test_unwritable_target(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ExportError, match=r"ro.*choose a folder you can write"):
            write_tree(ro / "inner", {"a.h": "x\n"})
        with pytest.raises(ExportError, match=r"ro.*choose a folder you can write"):
            write_tree(ro, {"a.h": "x\n"})
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize("name", ["../escape.c", "/abs.c", "a/../../b.c", ".hidden", "", "a\\b.c",
                                  MANIFEST])
def test_bad_file_names(tmp_path, name):
    with pytest.raises(ExportError, match="file name") as err:
        write_tree(tmp_path, {name: "x"})
    assert repr(name) in str(err.value)
    assert not (tmp_path.parent / "escape.c").exists()


def test_corrupt_manifest_counts_as_none(tmp_path):
    (tmp_path / "a.h").write_text("old\n")
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(ExportConflictError, match="a.h"):
        write_tree(tmp_path, {"a.h": "new\n"})
    write_tree(tmp_path, {"a.h": "new\n"}, force=True)
    assert json.loads((tmp_path / MANIFEST).read_text())["files"] == {"a.h": sha256_of(b"new\n")}


def test_target_below_a_file(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("data\n")
    with pytest.raises(ExportError, match=r"cannot create the export folder .*file\.txt/sub"):
        write_tree(f / "sub", {"a.h": "x\n"})


def test_unwritable_target_simulated(tmp_path, monkeypatch):
    """Where permissions cannot be tested (root), a folder that refuses every new entry."""
    import tempfile

    def refuse(prefix="", dir=None, **kw):
        raise PermissionError(13, "Permission denied", str(dir))

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    with pytest.raises(ExportError, match=r"cannot write into the export folder .*out'?: Permission "
                                          r"denied; choose a folder you can write") as err:
        write_tree(tmp_path / "out", {"a.h": "x\n"})
    assert "\n" not in str(err.value) and not (tmp_path / "out" / "a.h").exists()


def test_manifest_entries_outside_the_folder_are_dropped(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("v")
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text(json.dumps({"files": {"../victim.txt": sha256_of(b"v"),
                                                      "/etc/passwd": "0"}}))
    write_tree(out, {"a.h": "x\n"})
    assert read_manifest(out) == {"a.h": sha256_of(b"x\n")} and victim.read_text() == "v"


def test_same_file_given_twice_refused(tmp_path):
    with pytest.raises(ExportError, match=r"'\./a\.h' is given twice \(as 'a\.h'\)"):
        write_tree(tmp_path, {"a.h": "1", "./a.h": "2"})
    assert list(tmp_path.iterdir()) == []

"""The one writer of user folders: exports that never destroy a file.

Every export that writes several files into a folder the user names (``export_c``,
``LQRResult.export_c``, ``nhcontrol export-c --out DIR``, ...) goes through `write_tree()`:

1. **Staging.** The files are first written into a fresh hidden folder next to the target
   (``.<name>.nhcontrol-XXXX``, on the same file system, so each final move is one atomic
   ``rename``) and moved into the target only when all of them are written; an export that fails
   or is killed half way leaves the target as it was (a staging folder of a killed run is removed
   by the next run, `nhcontrol._util.debris`).
2. **No file it did not write is overwritten.** The target holds a manifest,
   ``.nhcontrol-export.json``, with the sha256 of every file the last export wrote. A file that
   is listed there with the same sha256 (written by nhcontrol, not edited since) is replaced; a
   file with exactly the new contents is left as it is; any other existing file (the user's own
   ``Makefile``, a generated file the user edited) is refused, all of them named in one error,
   unless ``force=True`` (``--force`` on the command line).
3. **No symbolic link inside the target is followed.** A symbolic link (or a folder, a device, a
   pipe) where a file of the export goes is refused even with ``force=True``: the link is not
   replaced and the file it points to is never opened. Files are created with ``O_NOFOLLOW`` and
   ``O_EXCL`` in the private staging folder and moved with ``rename``, which replaces a directory
   entry and never writes through one. The *target itself* may be a symbolic link to a folder
   (the user named it, as ``cd`` would follow it): it is resolved once, before anything is
   checked, and the export then works in the resolved folder only.
4. **Clear errors.** A target that is a file, a folder that cannot be created or written, a
   refused file: `ExportError` (an `OSError`), whose message names the path and says what to do,
   in one line, so the command line reports it with exit code 2 and no traceback.

A single file the user names (``SweepResult.save``, the ``save()`` of results) goes through
`write_file()`: a fresh temporary file next to it, then one rename (a link at the path is
replaced, never followed; an interrupted write leaves the old file).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Callable, Mapping

from .errors import ExportConflictError, ExportError

MANIFEST = ".nhcontrol-export.json"
"""File name of the manifest `write_tree()` keeps in every folder it writes."""

_MANIFEST_FORMAT = 1
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def sha256_of(data: bytes) -> str:
    """Hex sha256 of ``data`` (the digest the manifest records)."""
    return hashlib.sha256(data).hexdigest()


def _relative(name: str) -> PurePosixPath:
    """``name`` as a safe relative path inside the target (no ``..``, absolute or hidden parts)."""
    if not isinstance(name, str) or not name or "\x00" in name or "\\" in name:
        raise ExportError(f"file name {name!r} of the export is not a relative POSIX path")
    rel = PurePosixPath(name)
    if rel.is_absolute() or any(part in ("", ".", "..") or part.startswith(".") for part in rel.parts):
        raise ExportError(f"file name {name!r} of the export must be a relative path inside the "
                          f"target folder without '..' or hidden parts")
    return rel


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file ``path`` read without following a link (None otherwise)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_manifest(directory: str | os.PathLike, manifest: str = MANIFEST) -> dict[str, str]:
    """``{file name: sha256}`` of the files the last export wrote into ``directory`` (empty when
    there is no manifest, or one that cannot be read: then no existing file counts as written by
    nhcontrol)."""
    raw = _read_regular(Path(directory) / manifest)
    if raw is None:
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
        files = data["files"]
        return {str(k): str(v) for k, v in files.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (must not exist; never through a link) and write ``data``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _below_a_file(directory: str | os.PathLike) -> ExportError:
    return ExportError(f"cannot create the export folder {str(directory)!r}: a part of the path is "
                       f"a file, not a folder; give the path of a folder")


def _resolve_target(directory: str | os.PathLike) -> Path:
    """The real folder behind ``directory`` (created with its parents), or `ExportError`."""
    target = Path(os.path.abspath(os.fspath(directory)))
    try:
        target = target.resolve()
    except NotADirectoryError as exc:
        raise _below_a_file(directory) from exc
    except (OSError, RuntimeError) as exc:   # a loop of links
        raise ExportError(f"the export folder {str(directory)!r} cannot be resolved ({exc}); "
                          f"give a plain folder") from exc
    try:
        st = os.stat(target)
    except FileNotFoundError:
        try:
            target.mkdir(parents=True, exist_ok=True)
        except NotADirectoryError as exc:
            raise _below_a_file(directory) from exc
        except OSError as exc:
            raise ExportError(f"cannot create the export folder {str(directory)!r}: "
                              f"{exc.strerror or exc}; choose a folder you can write",
                              ) from exc
        return target
    except NotADirectoryError as exc:
        raise _below_a_file(directory) from exc
    except OSError as exc:
        raise ExportError(f"cannot use the export folder {str(directory)!r}: {exc.strerror or exc}; "
                          f"choose a folder you can write") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise ExportError(f"the export folder {str(directory)!r} is a file, not a folder; give the "
                          f"path of a folder (it is created when missing)")
    return target


def _check_parents(target: Path, rel: PurePosixPath) -> str | None:
    """Why a folder on the way to ``rel`` inside ``target`` cannot be used (None when fine)."""
    cur = target
    for part in rel.parts[:-1]:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return f"{cur.relative_to(target)} is {_kind(st.st_mode) if not stat.S_ISREG(st.st_mode) else 'a file'}"
    return None


def staging_folder(target: str | os.PathLike) -> Path:
    """A fresh private staging folder next to the folder ``target`` (same file system: each
    final move is one atomic rename), or inside it when its parent cannot be written; staging
    folders of killed runs are removed first (`nhcontrol._util.debris`)."""
    import tempfile

    from .debris import claim, remove_stale

    target = Path(target).resolve()
    prefix = f".{target.name}.nhcontrol-"
    last: OSError | None = None
    for parent in (target.parent, target):
        remove_stale(parent, prefix + "*")
        try:
            folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        except OSError as exc:
            last = exc
            continue
        claim(folder)
        return folder
    raise ExportError(f"cannot write into the export folder {str(target)!r}: "
                      f"{(last.strerror if last else None) or last}; choose a folder you can write")


def _move(src: Path, dst: Path) -> None:
    """Move ``src`` to ``dst`` in one ``rename`` (a link at ``dst`` would be replaced, never
    followed; callers refuse links before); across file systems through a temporary file
    created next to ``dst``."""
    try:
        os.replace(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        tmp = dst.with_name(f".{dst.name}.nhcontrol-tmp-{os.getpid()}")
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        _write_new(tmp, src.read_bytes())
        os.replace(tmp, dst)


def write_tree(directory: str | os.PathLike, files: Mapping[str, str | bytes], *, force: bool = False,
               manifest: str = MANIFEST, what: str = "the export") -> dict:
    """Write ``files`` into the folder ``directory`` without destroying anything.

    Parameters
    ----------
    directory : path-like
        The target folder (created with its parents when missing). A symbolic link naming a
        folder is resolved once; links *inside* it are never followed.
    files : mapping
        Relative POSIX path (``"nhc_model.c"``, ``"include/x.h"``; no ``..``, no hidden parts)
        to contents (``str``, written as UTF-8, or ``bytes``).
    force : bool
        Overwrite existing files that nhcontrol did not write or that were edited since (never
        a symbolic link, a folder or a special file).
    manifest : str
        File name of the manifest in the target (default `MANIFEST`).
    what : str
        What is written, for the messages (e.g. ``"export_c"``).

    Returns
    -------
    dict
        ``{"directory": str (the resolved folder), "files": [names written, in order],
        "replaced": [names of existing files replaced], "unchanged": [names whose contents were
        already identical], "manifest": manifest}``.

    Raises
    ------
    ExportError
        The target is a file or cannot be created or written; a file name is not a relative
        path; a symbolic link, folder or special file stands where a file goes.
    ExportConflictError
        Files that nhcontrol did not write (or that were edited since) would be overwritten and
        ``force`` is False (all of them named). Nothing is written then.
    OSError
        The file system fails while the files are written or moved (a full disk: ``errno``
        and ``filename`` say which); the files moved in so far are in the manifest.
    """
    if not files:
        raise ExportError(f"{what}: nothing to write")
    items: list[tuple[str, PurePosixPath, bytes]] = []
    for name, content in files.items():
        rel = _relative(name)
        if str(rel) == manifest:
            raise ExportError(f"{what}: the file name {name!r} is reserved for the manifest")
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        if any(str(rel) == seen for seen, _, _ in items):
            raise ExportError(f"{what}: the file {name!r} is given twice (as {str(rel)!r})")
        items.append((str(rel), rel, data))
    target = _resolve_target(directory)
    old = read_manifest(target, manifest)

    refused: list[str] = []       # links, folders, special files: even with force
    conflicts: list[str] = []     # foreign or edited regular files: unless force
    replaced: list[str] = []
    unchanged: list[str] = []
    for name, rel, data in items:
        bad_parent = _check_parents(target, rel)
        if bad_parent:
            refused.append(f"{name} ({bad_parent})")
            continue
        dst = target.joinpath(*rel.parts)
        try:
            st = os.lstat(dst)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            refused.append(f"{name} ({_kind(st.st_mode)})")
            continue
        current = _read_regular(dst)
        if current == data:
            unchanged.append(name)
        elif current is not None and old.get(name) == sha256_of(current):
            replaced.append(name)
        elif force:
            replaced.append(name)
        else:
            conflicts.append(name)
    try:
        st = os.lstat(target / manifest)
        if not stat.S_ISREG(st.st_mode):
            refused.append(f"{manifest} ({_kind(st.st_mode)})")
    except FileNotFoundError:
        pass
    if refused:
        raise ExportError(f"{what}: in {str(target)!r}, {', '.join(refused)} stand(s) where the export "
                          f"writes a file; nhcontrol never writes through a symbolic link or over a "
                          f"folder or special file (not even with force): remove them or choose "
                          f"another folder")
    if conflicts:
        raise ExportConflictError(
            f"{what}: {str(target)!r} holds {', '.join(conflicts)}, which nhcontrol did not write "
            f"(or which were edited since it did); nothing was written. Move them away, choose an "
            f"empty folder, or pass force=True (--force on the command line) to overwrite them")

    staging = staging_folder(target)
    written: list[str] = []
    try:
        for name, rel, data in items:
            src = staging.joinpath(*rel.parts)
            src.parent.mkdir(parents=True, exist_ok=True)
            _write_new(src, data)
        # earlier entries stay recorded while their files are unchanged
        record = {}
        for k, v in old.items():
            try:
                _relative(k)
            except ExportError:
                continue          # a manifest entry outside the folder is dropped, never read
            current = _read_regular(target / k)
            if current is not None and sha256_of(current) == v:
                record[k] = v
        complete = False
        try:
            for name, rel, data in items:
                dst = target.joinpath(*rel.parts)
                for _ in range(2):      # before the folders are made, and after
                    moved_parent = _check_parents(target, rel)
                    if moved_parent:
                        raise ExportError(f"{what}: {moved_parent} (changed during the export); "
                                          f"{name} not written")
                    dst.parent.mkdir(parents=True, exist_ok=True)
                if name in unchanged:
                    written.append(name)
                    record[name] = sha256_of(data)
                    continue
                # a link planted between the check and now is refused, not replaced
                try:
                    st = os.lstat(dst)
                    if not stat.S_ISREG(st.st_mode):
                        raise ExportError(f"{what}: {name} in {str(target)!r} became "
                                          f"{_kind(st.st_mode)} during the export; not written")
                except FileNotFoundError:
                    pass
                _move(staging.joinpath(*rel.parts), dst)
                written.append(name)
                record[name] = sha256_of(data)
            complete = True
        finally:
            # the manifest records what is in place, also after a failure half way (then its
            # own failure must not hide the first one)
            body = json.dumps({"format": _MANIFEST_FORMAT, "writer": "nhcontrol",
                               "files": dict(sorted(record.items()))}, indent=1) + "\n"
            mpath = staging / manifest
            try:
                _write_new(mpath, body.encode("utf-8"))
                _move(mpath, target / manifest)
            except OSError:
                if complete:
                    raise
    finally:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
    return {"directory": str(target), "files": written, "replaced": replaced,
            "unchanged": unchanged, "manifest": manifest}


def write_file(path: str | os.PathLike, write: Callable[[BinaryIO], Any], *, what: str,
               error: type[Exception] = ExportError) -> Path:
    """Write one file the user names: ``write(file object)`` into a fresh temporary file next to
    ``path`` (created exclusively: never through a planted link), then one rename onto
    ``path`` (a link there is replaced, never followed; an interrupted write leaves the old file).

    Raises ``error`` (one line, naming the path) when ``path`` is a folder, lies below a file or
    cannot be written.
    """
    def by_handle(fd: int, tmp: str) -> None:
        with os.fdopen(fd, "wb") as fh:
            write(fh)

    return _write_replacing(path, by_handle, what=what, error=error, suffix=".tmp")


def write_file_by_name(path: str | os.PathLike, write: Callable[[str], Any], *, what: str,
                       error: type[Exception] = ExportError) -> Path:
    """`write_file()` for writers that need a file name, not a file object (an animation
    writer, an external program): ``write(name)`` writes the fresh temporary file ``name`` next
    to ``path`` (created exclusively, ending in ``path``'s suffix so that the format is
    recognised), then one rename onto ``path``."""
    def by_name(fd: int, tmp: str) -> None:
        os.close(fd)
        write(tmp)

    p = Path(path)
    return _write_replacing(path, by_name, what=what, error=error, suffix=".tmp" + p.suffix)


def _write_replacing(path: str | os.PathLike, fill: Callable[[int, str], Any], *, what: str,
                     error: type[Exception], suffix: str) -> Path:
    import tempfile

    p = Path(path)
    try:
        if p.is_dir():
            raise error(f"{what}: {str(p)!r} is a folder; give a file name, e.g. "
                        f"{str(p / ('result' + (p.suffix or '')))!r}")
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=suffix, dir=p.parent)
        try:
            os.chmod(tmp, 0o644)
            fill(fd, tmp)
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except (NotADirectoryError, FileExistsError) as exc:
        raise error(f"{what}: cannot write {str(p)!r}: a part of the path "
                    f"({exc.filename or p.parent}) is a file, not a folder; choose another "
                    f"location") from exc
    except OSError as exc:
        if isinstance(exc, error):
            raise
        raise error(f"{what}: cannot write {str(p)!r}: {exc.strerror or exc}; choose a location "
                    f"you can write") from exc
    return p


__all__ = ["write_tree", "write_file", "write_file_by_name", "read_manifest", "sha256_of", "staging_folder", "MANIFEST"]

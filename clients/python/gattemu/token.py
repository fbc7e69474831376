"""Where `gattemu run` keeps the control token it makes, and reading it as `gattemu ctl` does
(`Sources/Control/ControlTokenFile.swift`, `ControlToken.swift`): `$XDG_RUNTIME_DIR/gattemu/control-PORT.token`
(an absolute `XDG_RUNTIME_DIR` only), else `/tmp/gattemu-UID/control-PORT.token`. The folder must be this
user's own, a real folder, mode 700; the file a regular file nobody else may access. Its first line is the token."""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Mapping

from .errors import TokenError

ENVIRONMENT_VARIABLES = ("GATTEMU_CONTROL_TOKEN", "GATTEMU_TOKEN")
"""Where `gattemu ctl` looks for a token first, in this order (an empty value counts as unset)."""

_MAX_TOKEN_FILE = 64 * 1024


def token_directory(uid: int | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The folder of user `uid`'s tokens (default: this process's effective user). `XDG_RUNTIME_DIR` is this
    process's, so it only applies to its own user; another user's is taken as `/tmp/gattemu-UID`."""
    environ = os.environ if environ is None else environ
    me = os.geteuid()
    runtime = environ.get("XDG_RUNTIME_DIR", "") if uid in (None, me) else ""
    if runtime.startswith("/"):
        return Path(runtime.rstrip("/") or "/") / "gattemu"
    return Path(f"/tmp/gattemu-{me if uid is None else uid}")


def token_path(port: int, uid: int | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The token file of user `uid`'s gattemu whose control API listens on `port`."""
    return token_directory(uid, environ) / f"control-{port}.token"


def read_token_file(path: str | os.PathLike) -> str:
    """The token in `path` (its first line), refusing a file group or others may access, as `gattemu run
    --control-token-file` and `gattemu ctl --token-file` do."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as error:
        raise TokenError(f"token file {path}: {error.strerror.lower() if error.strerror else error}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TokenError(f"token file {path}: not a regular file")
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            raise TokenError(f"token file {path}: group or others may access it (mode {mode:o}); chmod 600 {path}")
        data = b""
        while len(data) < _MAX_TOKEN_FILE and b"\n" not in data:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    line = data.split(b"\n", 1)[0]
    if line.endswith(b"\r"):
        line = line[:-1]
    try:
        token = line.decode("utf-8")
    except UnicodeDecodeError:
        token = ""
    if not token:
        raise TokenError(f"token file {path}: the first line must hold the token")
    return token


def find_token(port: int, uid: int | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The token `gattemu run` made for `port` (user `uid`'s, default this user's), or None when there is no such
    file (nothing running there, or a run given its own token). A folder or file others could have planted or
    read raises `TokenError`."""
    path = token_path(port, uid, environ)
    folder = path.parent
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return None
    owner = os.geteuid() if uid is None else uid
    if not stat.S_ISDIR(info.st_mode):
        raise TokenError(f"{folder} is not a folder (a symlink?): refusing to read the control token there")
    if info.st_uid != owner:
        raise TokenError(f"{folder} belongs to uid {info.st_uid}, not to uid {owner}: refusing to read the control token")
    if info.st_mode & 0o077:
        raise TokenError(f"{folder}: group or others may access it (mode {stat.S_IMODE(info.st_mode):o}); chmod 700 {folder}")
    try:
        os.lstat(path)
    except FileNotFoundError:
        return None
    return read_token_file(path)


def token_from_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """`$GATTEMU_CONTROL_TOKEN`, else `$GATTEMU_TOKEN` (empty counts as unset), else None."""
    environ = os.environ if environ is None else environ
    for name in ENVIRONMENT_VARIABLES:
        if environ.get(name):
            return environ[name]
    return None

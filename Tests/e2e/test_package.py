"""The Debian package as a rig runs it (docs/rig.md, "Install from the Debian package").

scripts/check-package installs out/package/gattemu_*.deb with apt into a clean Debian 12 root
($GATTEMU_CACHE/package/installed) and then runs this test in the sandbox. The test reads the installed
gattemu@.service, runs its ExecStart for the instance `noke-lock` the way systemd would (the unit's user and
group, its Environment, EnvironmentFile, RuntimeDirectory and LogsDirectory, `%i` and `$GATTEMU_ARGS` expanded)
inside that root, against the VM's real bluetoothd, and passes the Noke Android flow against it.

Without an installed package (scripts/check-package not run) the test is skipped with that reason; under
scripts/check-package (GATTEMU_REQUIRE_PACKAGE=1) a missing package fails it."""
from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import gattemu_ready, report
from flows import NOKE_SERVICE, NOKE_UNLOCK, noke_flow
from test_gattemu_noke import noke_name, say

INSTANCE = "noke-lock"
PORT = 8765  # the unit's default: gattemu run's own


def installed_root() -> Path:
    root = Path(os.environ.get("GATTEMU_CACHE", "/var/cache/gattemu")) / "package" / "installed"
    if not (root / "usr/bin/gattemu").exists():
        why = f"no installed package in {root}: scripts/check-package installs the .deb there and runs this test"
        if os.environ.get("GATTEMU_REQUIRE_PACKAGE") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return root


def service_entries(unit: Path) -> list[tuple[str, str]]:
    """The [Service] section of a unit file as (key, value) pairs, in order."""
    section, entries = "", []
    for raw in unit.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]":
            key, value = line.split("=", 1)
            entries.append((key.strip(), value.strip()))
    return entries


def assignments(text: str) -> dict[str, str]:
    """KEY=VALUE words (Environment= lines, EnvironmentFile= files), quotes removed as systemd does."""
    found = {}
    for word in shlex.split(text, comments=True):
        key, _, value = word.partition("=")
        found[key] = value
    return found


def command_line(template: str, env: dict[str, str]) -> list[str]:
    """ExecStart as systemd runs it: `$VAR` alone is split at whitespace, `${VAR}` is substituted."""
    argv = []
    for word in shlex.split(template):
        if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", word):
            argv += env.get(word[1:], "").split()
        else:
            argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m[1], ""), word))
    return argv


def user_ids(root: Path, user: str, group: str) -> tuple[int, int]:
    uid = next(int(f[2]) for f in (line.split(":") for line in (root / "etc/passwd").read_text().splitlines()) if f[0] == user)
    gid = next(int(f[2]) for f in (line.split(":") for line in (root / "etc/group").read_text().splitlines()) if f[0] == group)
    return uid, gid


# Inside a private mount namespace: the root gets /proc, /dev, the system bus, the unit's runtime and log
# folders, its own /tmp (PrivateTmp) and /etc/gattemu (for the instance's environment file) — the root itself is
# on the VM's read-only share — then the command runs chrooted as the unit's user.
ENTER = r"""
set -e
R="$1" W="$2" USERSPEC="$3"; shift 3
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
mount --bind /run/dbus "$W/run/dbus"
mount --rbind "$W/run" "$R/run"
mount --bind "$W/log" "$R/var/log"
mount --bind "$W/tmp" "$R/tmp"
mount --bind "$W/etc-gattemu" "$R/etc/gattemu"
exec chroot --userspec="$USERSPEC" "$R" "$@"
"""


def status_as(uid: int, token: str | None) -> int:
    """GET /v1/status from a process of user `uid` (no groups of its own: gattemu asks the system which the account
    is in), with `token` or none; the HTTP status."""
    code = ("import sys, urllib.request, urllib.error\n"
            f"request = urllib.request.Request('http://127.0.0.1:{PORT}/v1/status')\n"
            "if len(sys.argv) > 1: request.add_header('Authorization', 'Bearer ' + sys.argv[1])\n"
            "try:\n    print(urllib.request.urlopen(request, timeout=20).status)\n"
            "except urllib.error.HTTPError as error:\n    print(error.code)\n")
    done = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "/usr/bin/python3", "-c", code,
                           *([token] if token else [])], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


async def test_package_unit_runs_noke_flow(central, start_peripheral, env, tmp_path):
    root = installed_root()
    entries = service_entries(root / "lib/systemd/system/gattemu@.service")
    unit = {}
    for key, value in entries:
        unit.setdefault(key, []).append(value.replace("%i", INSTANCE))
    uid, gid = user_ids(root, unit["User"][-1], unit["Group"][-1])
    assert uid < 1000 and uid != 0, f"the unit's user gattemu is a system user, uid {uid}"

    # The folders systemd makes for the unit, owned by its user.
    work = tmp_path / "unit"
    runtime_name, logs_name = unit["RuntimeDirectory"][-1], unit["LogsDirectory"][-1]
    folders = {"run/dbus": (0o755, 0), f"run/{runtime_name}": (int(unit["RuntimeDirectoryMode"][-1], 8), uid),
               "log": (0o755, 0), f"log/{logs_name}": (int(unit["LogsDirectoryMode"][-1], 8), uid),
               "tmp": (0o1777, 0), "etc-gattemu": (0o755, 0)}
    for path, (mode, owner) in folders.items():
        (work / path).mkdir(parents=True, exist_ok=True)
        os.chown(work / path, owner, owner and gid)
        (work / path).chmod(mode)
    # What a rig owner writes for an instance: its adapter (the VM's peripheral controller).
    (work / f"etc-gattemu/{INSTANCE}.env").write_text(f'GATTEMU_ARGS="--adapter {env["GATTEMU_PERIPH"]}"\n')

    # The environment systemd gives the command.
    environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
                   "RUNTIME_DIRECTORY": f"/run/{runtime_name}", "LOGS_DIRECTORY": f"/var/log/{logs_name}"}
    for line in unit.get("Environment", []):
        environment.update(assignments(line))
    for line in unit.get("EnvironmentFile", []):
        path = line.removeprefix("-")
        assert path == f"/etc/gattemu/{INSTANCE}.env", f"the unit reads {path}"
        environment.update(assignments((work / "etc-gattemu" / Path(path).name).read_text()))
    [exec_start] = unit["ExecStart"]
    argv = command_line(exec_start, environment)
    assert argv[:2] == ["/usr/libexec/gattemu/gattemu-instance", INSTANCE], argv
    assert argv[2:] == ["--adapter", env["GATTEMU_PERIPH"]], argv

    enter = ["unshare", "--mount", "--propagation", "private", "sh", "-c", ENTER, "enter", str(root), str(work),
             f"{uid}:{gid}", "env", "-i", *(f"{k}={v}" for k, v in environment.items()), *argv]
    p = start_peripheral(cmd=" ".join(shlex.quote(a).replace("{", "{{").replace("}", "}}") for a in enter),
                         name="gattemu@" + INSTANCE)
    p.ready = gattemu_ready
    await p.wait_ready(120)
    owner = Path(f"/proc/{p.proc.pid}/status").read_text()
    assert re.search(rf"^Uid:\s+{uid}\s", owner, re.M), f"gattemu runs as the unit's user {uid}:\n{owner}"
    exe = os.readlink(f"/proc/{p.proc.pid}/exe")
    assert exe == str(root / "usr/bin/gattemu") or exe == "/usr/bin/gattemu", f"the installed binary runs: {exe}"

    await p.advertising(central, name=noke_name(), service_uuid=NOKE_SERVICE)
    run = await noke_flow(central, say)
    assert run.adv.name == noke_name()
    assert len(run.session) == 20, run.session.hex()
    assert len(run.responses) == 1, [r.hex() for r in run.responses]
    assert run.responses[0][:3] == bytes([0x51, 0x60, NOKE_UNLOCK[2]]), run.responses[0].hex()

    # The control token is where the unit's XDG_RUNTIME_DIR puts it, the service user's alone, and it works.
    token_file = work / "run" / runtime_name / "gattemu" / f"control-{PORT}.token"
    assert token_file.stat().st_uid == uid and token_file.stat().st_mode & 0o777 == 0o600, oct(token_file.stat().st_mode)
    request = urllib.request.Request(f"http://127.0.0.1:{PORT}/v1/status",
                                     headers={"Authorization": f"Bearer {token_file.read_text().splitlines()[0]}"})
    with urllib.request.build_opener().open(request, timeout=10) as answer:
        status = json.load(answer)
    assert status["advertising"]["advertised"], status

    # The tester's account, in group gattemu-control as docs/rig.md says (scripts/check-package made it), opens the
    # dashboard's data with no token; any other account still gets 403, token or not.
    tester = next(int(f[2]) for f in (line.split(":") for line in (root / "etc/passwd").read_text().splitlines())
                  if f[0] == "tester")
    as_tester, as_nobody = await asyncio.gather(asyncio.to_thread(status_as, tester, None),
                                                asyncio.to_thread(status_as, 65534, token_file.read_text().splitlines()[0]))
    assert as_tester == 200, f"the tester's account (uid {tester}, group gattemu-control): {as_tester}"
    assert as_nobody == 403, f"another account with the token: {as_nobody}"

    assert p.stop() == 0, f"SIGTERM (the unit's KillSignal) ends it with status 0:\n{p.tail()}"
    events = work / "log" / logs_name / f"{INSTANCE}.jsonl"
    assert events.stat().st_uid == uid and events.stat().st_mode & 0o777 == 0o600
    kinds = [json.loads(line).get("event") for line in events.read_text().splitlines() if line.startswith("{")]
    assert "write" in kinds and NOKE_UNLOCK.hex() in events.read_text(), kinds
    assert not token_file.exists(), "a clean stop removes the token"
    report(f"package: gattemu@{INSTANCE}'s ExecStart ({shlex.join(argv)}) ran the installed binary "
           f"({(root / 'usr/bin/gattemu').stat().st_size // 1024} KiB) as uid {uid} in a clean Debian 12 root; "
           f"the Noke flow passed; {len(kinds)} events in {events.name}")

"""gattemu vs peer emulators, side by side in one sandbox VM.

Run through scripts/bench (it boots the sandbox); by hand inside the sandbox:
    python $GATTEMU_ROOT/benchmarks/bench.py --out $GATTEMU_OUT/bench [--quick]

For each implementation (gattemu with AcquireNotify, gattemu with
PropertiesChanged, bless, bluez-peripheral, bluetoothctl's C gatt server) and
each profile (Noke, BLEProof) it starts the peripheral on $GATTEMU_PERIPH and
measures, with the Bumble central of Tests/e2e/central.py on $GATTEMU_CENTRAL:

  start: process start -> bluetoothd's ActiveInstances goes up (advertisement
         registered), -> the central's first advertising report, -> first
         successful read (connect + MTU + discovery + read)
  rtt:   write -> notification (or indication) round trips, p50/p99
  cpu:   user+sys of the peripheral process (and of bluetoothd) per 1,000 ops
  rss:   VmHWM / VmRSS (and smaps_rollup's Anonymous) of the peripheral process after each phase
  burst: notifications/s for a burst of BURST notifications per 2-byte write
  soak:  RSS after N pipelined write->notify operations (leaks)

Writes bench.json and bench.md to --out.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))
sys.path.insert(0, str(HERE / "peers"))

import central as C  # noqa: E402
import behaviour as B  # noqa: E402
import relay_bench as R  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
CONN_INTERVAL_MS = 7.5
LOGDIR = Path("/tmp/gattemu-bench")
LOGDIR_COPY = [Path(".")]


def now() -> float:
    return time.monotonic()


def log(msg: str) -> None:
    print(f"bench: {msg}", flush=True)


# ------------------------------------------------------------------ /proc
def cpu_seconds(pid: int) -> float | None:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / CLK_TCK  # utime, stime (fields 14, 15)
    except (OSError, IndexError, ValueError):
        return None


def machine_cpu(pids: list[int] | None = None) -> tuple[dict[int, tuple[str, float]], float, float]:
    """The whole machine's CPU so far: each process's name and seconds (every process in /proc, or `pids`; threads
    included), and the busy and total seconds of all CPUs (/proc/stat, interrupts included)."""
    by_pid: dict[int, tuple[str, float]] = {}
    for entry in (Path(f"/proc/{pid}") for pid in pids) if pids is not None else Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            head, _, rest = (entry / "stat").read_text().rpartition(")")
            f = rest.split()
            by_pid[int(entry.name)] = (head.partition("(")[2], (int(f[11]) + int(f[12])) / CLK_TCK)
        except (OSError, IndexError, ValueError):
            continue
    busy = total = 0.0
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle, iowait
        total = sum(fields[:8]) / CLK_TCK  # user nice system idle iowait irq softirq steal
        busy = total - idle / CLK_TCK
    except (OSError, IndexError, ValueError):
        pass
    return by_pid, busy, total


def machine_cpu_spent(before, after) -> tuple[dict[str, float], float, float]:
    """CPU seconds between two `machine_cpu` readings: by process name (a kernel worker's name changes with the
    queue it serves; a process started in between counts from its start, one that ended is not counted), and the
    CPUs' busy and total seconds."""
    (pids0, busy0, total0), (pids1, busy1, total1) = before, after
    used: dict[str, float] = {}
    for pid, (name, seconds) in pids1.items():
        spent = seconds - pids0.get(pid, (name, 0.0))[1]
        if spent > 0:
            name = name.split("-", 1)[0] if name.startswith("kworker/") else name  # kworker/u5:2-hci3 -> kworker/u5:2
            used[name] = used.get(name, 0.0) + spent
    return used, busy1 - busy0, total1 - total0


def machine_cpu_summary(spent: tuple[dict[str, float], float, float], per: int) -> dict:
    """`machine_cpu_spent` (or a sum of them) as ms of CPU per 1,000 of `per` operations for each process name that
    used any, the rest of the busy time (processes that ended, interrupts), and how busy the CPUs were (1.0 = all
    of them, all the time)."""
    used, busy, total = spent
    scale = 1e6 / per if per else 0.0
    return {"ms_per_1000_by_process": {n: round(t * scale, 1) for n, t in sorted(used.items(), key=lambda x: -x[1])},
            "ms_per_1000_busy": round(busy * scale, 1),
            "ms_per_1000_not_in_processes": round(max(busy - sum(used.values()), 0.0) * scale, 1),
            "busy_fraction": round(busy / total, 3) if total > 0 else None}


def machine_cpu_between(before, after, per: int) -> dict:
    """What `machine_cpu` says happened between two readings, per 1,000 of `per` operations (machine_cpu_summary)."""
    return machine_cpu_summary(machine_cpu_spent(before, after), per)


def machine_cpu_add(a: tuple[dict[str, float], float, float], b: tuple[dict[str, float], float, float]):
    """Two `machine_cpu_spent` answers together."""
    used = dict(a[0])
    for name, seconds in b[0].items():
        used[name] = used.get(name, 0.0) + seconds
    return used, a[1] + b[1], a[2] + b[2]


def mem_kib(pid: int) -> dict:
    """VmHWM/VmRSS from status, and smaps_rollup's Anonymous: heap and stacks, what one more instance
    costs (file pages, even a tmpfs copy's, are shareable)."""
    out = {}
    for name, keys in (("status", ("VmHWM", "VmRSS")), ("smaps_rollup", ("Anonymous",))):
        try:
            for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
                k, _, v = line.partition(":")
                if k in keys:
                    out[k] = int(v.split()[0])
        except OSError:
            pass
    return out


def pidof(name: str) -> int | None:
    r = subprocess.run(["pidof", "-s", name], capture_output=True, text=True)
    return int(r.stdout.split()[0]) if r.stdout.strip() else None


def percentile(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# ------------------------------------------------------------------ central
class BenchCentral(C.BumbleCentral):
    """The e2e Bumble central, connecting with a short connection interval."""

    async def _connect_once(self, adv, timeout, mtu: int = 517):
        from bumble.core import PhysicalTransport
        from bumble.device import ConnectionParametersPreferences, Peer
        from bumble.hci import OwnAddressType, Phy
        prefs = {Phy.LE_1M: ConnectionParametersPreferences(
            connection_interval_min=CONN_INTERVAL_MS, connection_interval_max=CONN_INTERVAL_MS,
            max_latency=0, supervision_timeout=720)}
        conn = await self.device.connect(adv.raw, transport=PhysicalTransport.LE,
                                         connection_parameters_preferences=prefs,
                                         own_address_type=OwnAddressType.PUBLIC, timeout=timeout)
        c = C.BumbleConnection(self.device, conn, Peer(conn))
        try:
            await asyncio.wait_for(c._peer.request_mtu(mtu), 20)
            await asyncio.wait_for(c._peer.discover_services(), 20)
            await asyncio.wait_for(c._peer.discover_characteristics(), 20)
        except BaseException:
            await c.disconnect()
            raise
        c.interval_ms = getattr(conn.parameters, "connection_interval", None)
        return c


# ------------------------------------------------------------------ bluetoothd watch
class AdvWatch:
    """Follows LEAdvertisingManager1.ActiveInstances of the peripheral adapter."""

    def __init__(self, adapter: str):
        self.path = f"/org/bluez/{adapter}"
        self.bus = None
        self.active = 0
        self.changed = asyncio.Event()
        self.last_change = 0.0

    async def start(self):
        from dbus_fast import BusType, Message
        from dbus_fast.aio import MessageBus
        self.bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
        rule = (f"type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',"
                f"member='PropertiesChanged',path='{self.path}'")
        await self.bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                    interface="org.freedesktop.DBus", member="AddMatch",
                                    signature="s", body=[rule]))
        self.bus.add_message_handler(self._on)
        self.active = await self.get()

    def _on(self, msg):
        if msg.member != "PropertiesChanged" or msg.path != self.path:
            return
        iface, changed = msg.body[0], msg.body[1]
        if iface == "org.bluez.LEAdvertisingManager1" and "ActiveInstances" in changed:
            self.active = changed["ActiveInstances"].value
            self.last_change = now()
            self.changed.set()

    async def get(self) -> int:
        from dbus_fast import Message, MessageType
        r = await self.bus.call(Message(destination="org.bluez", path=self.path,
                                        interface="org.freedesktop.DBus.Properties", member="Get",
                                        signature="ss", body=["org.bluez.LEAdvertisingManager1",
                                                              "ActiveInstances"]))
        return r.body[0].value if r.message_type != MessageType.ERROR else 0

    async def wait(self, pred, timeout: float) -> float | None:
        end = now() + timeout
        while not pred(self.active):
            left = end - now()
            if left <= 0:
                return None
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))
            except asyncio.TimeoutError:
                self.active = await self.get()
                self.last_change = now()
        return self.last_change


# ------------------------------------------------------------------ implementations
@dataclass
class Impl:
    key: str
    label: str
    notify_path: str           # how notifications reach bluetoothd
    burst: bool = True         # implements the burst write
    echo: bool = False         # bluetoothctl: notifications echo the written value

    def argv(self, profile: str, env: dict) -> list[str]:
        adapter = env["GATTEMU_PERIPH"]
        py = sys.executable
        if self.key.startswith("gattemu"):
            prof = (HERE / "profiles" / "noke-burst.json" if profile == "noke"
                    else ROOT / "profiles" / "bleproof.json")
            path = "properties" if self.key == "gattemu-props" else "acquire"
            binary = env["GATTEMU_BASELINE_BIN"] if self.key == BASELINE_KEY else env["GATTEMU_BIN"]
            # noke-burst.json extends ../../profiles/noke-lock.json, outside its own folder.
            return [str(binary), "run", str(prof), "--allow-extends-outside", "--adapter", adapter, "--notify-path", path]
        if self.key == "bless":
            return [py, str(HERE / "peers" / "bless_peer.py"), "--profile", profile, "--adapter", adapter,
                    "--address", env["GATTEMU_PERIPH_ADDRESS"]]
        if self.key == "bluez-peripheral":
            return [py, str(HERE / "peers" / "bluez_peripheral_peer.py"), "--profile", profile,
                    "--adapter", adapter]
        if self.key == "bluetoothctl":
            return ["bash", str(HERE / "peers" / "bluetoothctl_peer.sh"), profile,
                    env["GATTEMU_PERIPH_ADDRESS"]]
        raise ValueError(self.key)


def restart_bluetoothd(conf: Path | None) -> None:
    """Restarts the sandbox's bluetoothd, with `conf` as its main.conf (None: the system's)."""
    environment = dict(os.environ)
    environment.pop("GATTEMU_BLUETOOTHD_CONF", None)
    if conf is not None:
        environment["GATTEMU_BLUETOOTHD_CONF"] = str(conf)
    subprocess.run([str(Path(__file__).resolve().parents[1] / "scripts" / "sandbox-bluetoothd"), "restart"], check=True,
                   timeout=90, env=environment, stdin=subprocess.DEVNULL)


# The relay section's two runs of one gattemu device (noke-burst.json): directly, and through `gattemu relay`.
RELAY_DIRECT = Impl("relay-direct", "gattemu device, directly", "AcquireNotify")
RELAY = Impl("relay", "the same device through gattemu relay", "AcquireNotify")
# The relay section's profile name on a paced link (GATTEMU_LINK, the second VM of scripts/bench).
LINK_PROFILE = "noke-link"


def link_model(env: dict) -> tuple[int, int] | None:
    """The sandbox's paced link as the radio took it: (interval ms, packets per event) from the line the patched
    btvirt writes to $GATTEMU_OUT/btvirt.log (docs/sandbox.md, GATTEMU_LINK), or None when its links are unpaced.
    btvirt alone decides what a valid GATTEMU_LINK is; this reads its answer instead of repeating its grammar."""
    try:
        text = (Path(env["GATTEMU_OUT"]) / "btvirt.log").read_text(errors="replace")
    except (KeyError, OSError):
        return None
    said = re.search(r"BTVIRT_LINK: a connection event every (\d+) ms, at most (\d+) ACL packets each way", text)
    return (int(said[1]), int(said[2])) if said else None


# `--baseline BIN`: another build of gattemu (scripts/bench --baseline REV builds one) run beside this one, the same
# way, in the same VM and minute: the before/after of a change, as a ratio.
BASELINE_KEY = "gattemu-base"

IMPLS = [
    Impl("gattemu", "gattemu (AcquireNotify)", "AcquireNotify"),
    Impl("gattemu-props", "gattemu (PropertiesChanged)", "PropertiesChanged"),
    Impl("bless", "bless", "PropertiesChanged"),
    Impl("bluez-peripheral", "bluez-peripheral", "PropertiesChanged"),
    Impl("bluetoothctl", "bluetoothctl gatt (C)", "AcquireNotify", burst=False, echo=True),
]


# ------------------------------------------------------------------ one peripheral run
@dataclass
class Run:
    impl: Impl
    profile: str
    results: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)


class Bench:
    def __init__(self, args, env, link: tuple[int, int] | None):
        self.args = args
        self.env = env
        self.link = link  # link_model(env): the paced link btvirt took, or None
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        LOGDIR_COPY[0] = self.out
        self.central: BenchCentral | None = None
        self.watch: AdvWatch | None = None
        self.bluetoothd = pidof("bluetoothd")

    async def setup(self):
        self.central = BenchCentral(self.env["GATTEMU_CENTRAL"])
        await self.central.start()
        self.watch = AdvWatch(self.env["GATTEMU_PERIPH"])
        await self.watch.start()

    # -------------------------------------------------------------- process
    def spawn(self, run: Run) -> subprocess.Popen:
        return self.spawn_argv(run.impl.argv(run.profile, self.env), p_log(run))

    @staticmethod
    def spawn_argv(argv: list[str], log_path: Path) -> subprocess.Popen:
        # On the VM's tmpfs: the out dir is a 9p share where every log line of a
        # chatty peripheral would cost a synchronous round trip to the host.
        LOGDIR.mkdir(parents=True, exist_ok=True)
        logf = open(log_path, "ab")
        logf.write(f"=== {time.strftime('%T')} {shlex.join(argv)}\n".encode())
        logf.flush()
        p = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        p._logf = logf  # noqa: SLF001
        return p

    def server_pid(self, run: Run, p: subprocess.Popen) -> int:
        """The process doing the GATT work (the bluetoothctl wrapper execs it)."""
        return p.pid

    @staticmethod
    def stop(p: subprocess.Popen):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        p._logf.close()  # noqa: SLF001
        try:
            name = Path(p._logf.name).name  # noqa: SLF001
            with open(p._logf.name, "rb") as src, open(LOGDIR_COPY[0] / name, "wb") as dst:  # noqa: SLF001
                dst.write(src.read())
        except OSError:
            pass

    # -------------------------------------------------------------- phases
    async def measure_start(self, run: Run, uuid: str):
        """Start the process with the central already scanning."""
        dev = self.central.device
        seen: asyncio.Future = asyncio.get_running_loop().create_future()
        acc: dict = {}

        def on_adv(adv):
            info = C.BumbleCentral._info(adv, acc)
            if C.norm_uuid(uuid) in info.service_uuids and not seen.done():
                seen.set_result((now(), info))

        base = self.watch.active
        dev.on("advertisement", on_adv)
        await dev.start_scanning(filter_duplicates=False, active=True)
        t0 = now()
        p = self.spawn(run)
        try:
            t_reg = await self.watch.wait(lambda a: a > base, 60)
            try:
                t_seen, info = await asyncio.wait_for(asyncio.shield(seen), 60)
            except asyncio.TimeoutError:
                t_seen, info = None, None
        finally:
            dev.remove_listener("advertisement", on_adv)
            try:
                await dev.stop_scanning()
            except Exception:  # noqa: BLE001
                pass
        r = run.results
        r["start_to_registered_ms"] = (t_reg - t0) * 1000 if t_reg else None
        r["start_to_seen_ms"] = (t_seen - t0) * 1000 if t_seen else None
        return p, t0, info

    async def connect(self, info, uuid: str, pinned: bool = False):
        """Connects to `info`; on failure scans again for `uuid` (`pinned`: for `info`'s address only)."""
        try:
            return await asyncio.wait_for(self.central._connect_once(info, 30), 40)
        except Exception as e:  # noqa: BLE001 - fall back to the e2e helper's retrying connect
            log(f"first connect failed ({type(e).__name__}: {e}); retrying with a fresh scan")
            if pinned:
                return await self.central.connect(info.address, service_uuid=uuid)
            return await self.central.connect(service_uuid=uuid)

    async def rtt_loop(self, conn, write_uuid: str, n: int, make, response: bool, q: asyncio.Queue,
                       timeout: float = 10.0) -> tuple[list[float], int]:
        """n sequential write -> notification round trips; returns (ms list, timeouts)."""
        char = conn._char(write_uuid)
        out: list[float] = []
        lost = 0
        for i in range(n):
            while not q.empty():
                q.get_nowait()
            data = make(i)
            t = time.perf_counter()
            w = asyncio.ensure_future(char.write_value(data, with_response=response))
            try:
                await asyncio.wait_for(q.get(), timeout)
                out.append((time.perf_counter() - t) * 1000)
            except asyncio.TimeoutError:
                lost += 1
                if lost >= 3 and not out:
                    break
            await w
        return out, lost

    async def phase(self, run: Run, name: str, pid: int, coro):
        perf = self.start_perf(run, name, pid)
        c0, b0, t0 = cpu_seconds(pid), cpu_seconds(self.bluetoothd) if self.bluetoothd else None, now()
        res = await coro
        c1, b1, t1 = cpu_seconds(pid), cpu_seconds(self.bluetoothd) if self.bluetoothd else None, now()
        self.stop_perf(perf)
        return res, {"cpu_s": (c1 - c0) if c0 is not None and c1 is not None else None,
                     "bluetoothd_cpu_s": (b1 - b0) if b0 is not None and b1 is not None else None,
                     "wall_s": t1 - t0, "mem_kib": mem_kib(pid)}

    def start_perf(self, run: Run, name: str, pid: int):
        """--perf PHASE: a sampled call graph of the implementation's process during that phase (perf record,
        cpu-clock: TCG has no hardware counters), reported by symbol into perf-IMPL-PROFILE-PHASE.txt. The phase's
        own figures are disturbed by it: profile in a run of its own."""
        if name not in (self.args.perf or "").split(","):
            return None
        if not shutil.which("perf"):
            log("  --perf: no perf here (install linux-perf)")
            return None
        base = self.out / f"perf-{run.impl.key}-{run.profile}-{name}"
        # --no-buildid: collecting build ids reads every mapped file at the end, gattemu's 90 MB over 9p under TCG
        # (longer than the wait below: the data file was left without its samples).
        with open(f"{base}.log", "w") as output:  # perf's own messages; the child keeps its copy of the descriptor
            proc = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "--no-buildid", "-p",
                                     str(pid), "-o", f"{base}.data"], stdout=subprocess.DEVNULL, stderr=output)
        return proc, base

    @staticmethod
    def stop_perf(perf) -> None:
        if perf is None:
            return
        proc, base = perf
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(300)
        except subprocess.TimeoutExpired:
            proc.kill()
            log(f"  --perf: perf record did not end within 300 s ({base}.log)")
        report = subprocess.run(["perf", "report", "-i", f"{base}.data", "--stdio", "--no-children", "-g", "none",
                                 "--percent-limit", "0.5", "--sort", "dso,symbol"],
                                capture_output=True, text=True, timeout=300).stdout
        demangle = shutil.which("swift-demangle")
        if demangle:
            report = subprocess.run([demangle, "--simplified"], input=report, capture_output=True, text=True,
                                    timeout=60).stdout or report
        Path(f"{base}.txt").write_text(report)
        log(f"  --perf: {base}.txt")

    def record_rtt(self, run: Run, name: str, ms: list[float], lost: int, cost: dict):
        n = len(ms)
        run.results[name] = {
            "ops": n, "lost": lost,
            "p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99),
            "mean_ms": statistics.fmean(ms) if ms else None,
            "cpu_ms_per_1000": (cost["cpu_s"] * 1000 * 1000 / n) if n and cost["cpu_s"] is not None else None,
            "bluetoothd_cpu_ms_per_1000": (cost["bluetoothd_cpu_s"] * 1e6 / n)
            if n and cost["bluetoothd_cpu_s"] is not None else None,
            "wall_s": cost["wall_s"], "mem_kib": cost["mem_kib"],
        }
        log(f"  {run.impl.key}/{run.profile} {name}: n={n} lost={lost} "
            f"p50={fmt(percentile(ms, 50))} p99={fmt(percentile(ms, 99))} ms "
            f"cpu/1000={fmt(run.results[name]['cpu_ms_per_1000'])} ms")

    @staticmethod
    async def burst_once(conn, q: asyncio.Queue, k: int) -> tuple[int, float]:
        """One burst write; the notifications received of it (5 s at most between two) and the seconds from the
        write to the last."""
        char = conn._char(B.NOKE["rx"])
        while not q.empty():
            q.get_nowait()
        t = time.perf_counter()
        await char.write_value(bytes([B.BURST_OPCODE, k & 0xFF]), with_response=False)
        got = 0
        last = t
        try:
            while got < B.BURST:
                v = await asyncio.wait_for(q.get(), 5)
                if v[:1] == b"\x50":
                    got += 1
                    last = time.perf_counter()
        except asyncio.TimeoutError:
            pass
        return got, last - t

    @staticmethod
    def burst_results(bursts: int, total: int, elapsed: float, cpu_s: float | None, machine: dict, pid: int) -> dict:
        return {"bursts": bursts, "burst_size": B.BURST, "received": total, "missing": bursts * B.BURST - total,
                "notifications_per_s": total / elapsed if elapsed > 0 else None,
                "cpu_ms_per_1000": (cpu_s * 1e6 / total) if total and cpu_s is not None else None,
                "machine": machine, "mem_kib": mem_kib(pid)}

    async def burst(self, run: Run, conn, q: asyncio.Queue, pid: int, bursts: int):
        total = 0
        elapsed = 0.0
        c0 = cpu_seconds(pid)
        m0 = machine_cpu()
        done = 0
        for k in range(bursts):
            got, seconds = await self.burst_once(conn, q, k)
            total += got
            elapsed += seconds
            done += 1
            if got == 0:
                break
        c1 = cpu_seconds(pid)
        machine = machine_cpu_between(m0, machine_cpu(), total)
        run.results["burst"] = self.burst_results(done, total, elapsed, None if c0 is None or c1 is None else c1 - c0,
                                                  machine, pid)
        run.results["burst"]["peripheral_side_notifications_per_s"] = (
            gattemu_burst_rate(Path(p_log(run))) if run.impl.key.startswith("gattemu") else None)
        log(f"  {run.impl.key}/noke burst: {total} received, {run.results['burst']['missing']} missing, "
            f"{fmt(run.results['burst']['notifications_per_s'])}/s")

    async def interleaved_bursts(self, legs: list[tuple[Run, object, asyncio.Queue, int, bool]], bursts: int) -> list[float]:
        """`bursts` bursts on each of two legs (run, connection, queue, pid, subscribed now), taking turns (ABBA: each
        leg goes first in half of the pairs), so that what slows the whole machine for a while slows both alike; only
        the leg bursting is subscribed. Each leg's figures as `burst` records them, with each burst's rate; answers
        each pair's ratio of the second leg's rate to the first's."""
        acc = {id(run): {"total": 0, "elapsed": 0.0, "cpu": 0.0, "cpu_known": True, "machine": ({}, 0.0, 0.0),
                         "done": 0, "rates": []} for run, *_ in legs}
        subscribed = {id(run): now for run, _, _, _, now in legs}
        # Read around every burst: only the processes that have used CPU so far (reading all of /proc, a few hundred
        # files, costs the central more than a burst's worth of notifications under TCG); the rest of the busy time
        # is reported as not in a process.
        busy_pids = [pid for pid, (_, seconds) in machine_cpu()[0].items() if seconds >= 0.01]
        pairs: list[float] = []
        for k in range(bursts):
            rates: dict[int, float] = {}
            for run, conn, q, pid, _ in (legs if k % 2 == 0 else legs[::-1]):
                for other, other_conn, other_q, _, _ in legs:
                    want = other is run
                    if subscribed[id(other)] != want:
                        char = other_conn._char(B.NOKE["tx"])
                        await (char.subscribe(other_q.put_nowait) if want else char.unsubscribe())
                        subscribed[id(other)] = want
                # The relay subscribes to the device (and unsubscribes) after the mirror answered the CCCD write.
                await asyncio.sleep(0.5)
                a = acc[id(run)]
                c0, m0 = cpu_seconds(pid), machine_cpu(busy_pids)
                got, seconds = await self.burst_once(conn, q, k)
                m1, c1 = machine_cpu(busy_pids), cpu_seconds(pid)
                a["rates"].append(round(got / seconds, 1) if seconds > 0 else None)
                a["total"] += got
                a["elapsed"] += seconds
                a["done"] += 1
                a["machine"] = machine_cpu_add(a["machine"], machine_cpu_spent(m0, m1))
                if c0 is None or c1 is None:
                    a["cpu_known"] = False
                else:
                    a["cpu"] += c1 - c0
                if seconds > 0:
                    rates[id(run)] = got / seconds
            first, second = id(legs[0][0]), id(legs[1][0])
            if rates.get(first) and second in rates:
                pairs.append(rates[second] / rates[first])
        for run, _, _, pid, _ in legs:
            a = acc[id(run)]
            run.results["burst"] = self.burst_results(
                a["done"], a["total"], a["elapsed"], a["cpu"] if a["cpu_known"] else None,
                machine_cpu_summary(a["machine"], a["total"]), pid)
            run.results["burst"].update(interleaved=True, rates=a["rates"])
            log(f"  {run.impl.key}/noke burst (interleaved): {a['total']} received, "
                f"{run.results['burst']['missing']} missing, {fmt(run.results['burst']['notifications_per_s'])}/s")
        return pairs

    async def soak(self, run: Run, conn, q: asyncio.Queue, pid: int, checkpoints: list[int], window: int = 8):
        """Pipelined write-without-response -> notification, `window` in flight; RSS at checkpoints."""
        char = conn._char(B.NOKE["rx"])
        sem = asyncio.Semaphore(window)
        done = 0
        stop = asyncio.Event()
        points = []

        async def drain():
            nonlocal done
            while not stop.is_set():
                try:
                    await asyncio.wait_for(q.get(), 10)
                except asyncio.TimeoutError:
                    stop.set()
                    return
                done += 1
                sem.release()

        while not q.empty():
            q.get_nowait()
        t0 = now()
        c0 = cpu_seconds(pid)
        d = asyncio.ensure_future(drain())
        sent = 0
        target = max(checkpoints)
        cp = sorted(checkpoints)
        payload = bytearray(20)
        while sent < target and not stop.is_set():
            try:
                await asyncio.wait_for(sem.acquire(), 10)
            except asyncio.TimeoutError:
                break
            payload[2] = sent & 0xFF
            await char.write_value(bytes(payload), with_response=False)
            sent += 1
            # A checkpoint counts once at most `window` of its operations are unanswered: under a flood
            # the kernel drops a few write commands (no answer ever comes), which must not hide the
            # checkpoint; `answered` says how many were.
            while cp and done + window >= cp[0]:
                points.append({"ops": cp.pop(0), "answered": done, "mem_kib": mem_kib(pid), "t_s": now() - t0})
        sending_ended = now()
        while done < sent and not stop.is_set() and now() - sending_ended < 30:
            await asyncio.sleep(0.05)
        while cp and sent >= cp[0]:
            points.append({"ops": cp.pop(0), "answered": done, "mem_kib": mem_kib(pid), "t_s": now() - t0})
        stop.set()
        d.cancel()
        elapsed = now() - t0
        c1 = cpu_seconds(pid)
        run.results["soak"] = {
            "sent": sent, "answered": done, "window": window, "points": points,
            "ops_per_s": done / elapsed if elapsed else None,
            "cpu_ms_per_1000": ((c1 - c0) * 1e6 / done) if done and c0 is not None else None,
        }
        log(f"  {run.impl.key}/noke soak: {done}/{sent} answered, "
            + ", ".join(f"{p['ops']}: RSS {p['mem_kib'].get('VmRSS')} KiB" for p in points))

    # -------------------------------------------------------------- one impl x profile
    async def run_one(self, run: Run):
        a = self.args
        noke = run.profile == "noke"
        svc = B.NOKE["service"] if noke else B.BLEPROOF["service"]
        log(f"{run.impl.label} / {run.profile}")
        p, t0, info = await self.measure_start(run, svc)
        pid = self.server_pid(run, p)
        conn = None
        try:
            if info is None:
                raise RuntimeError("advertisement never seen")
            conn = await self.connect(info, svc)
            read_uuid = B.NOKE["session"] if noke else B.BLEPROOF["info"]
            v = await conn.read(read_uuid)
            run.results["start_to_first_read_ms"] = (now() - t0) * 1000
            run.results["first_read_len"] = len(v)
            run.results["conn_interval_ms"] = getattr(conn, "interval_ms", None)
            run.results["mem_after_start_kib"] = mem_kib(pid)
            log(f"  registered {fmt(run.results['start_to_registered_ms'])} ms, seen "
                f"{fmt(run.results['start_to_seen_ms'])} ms, first read {fmt(run.results['start_to_first_read_ms'])} ms")
            q: asyncio.Queue = asyncio.Queue()
            if noke:
                sub = B.NOKE["rx"] if run.impl.echo else B.NOKE["tx"]
                await conn.subscribe(sub, q.put_nowait)
                await asyncio.sleep(0.3)

                def cmd(i):
                    b = bytearray(20)
                    b[2] = i & 0xFF
                    return bytes(b)
                # warm-up, not counted
                await self.rtt_loop(conn, B.NOKE["rx"], min(20, a.ops), cmd, True, q, timeout=5)
                for name, resp in (("rtt_write_req", True), ("rtt_write_cmd", False)):
                    (ms, lost), cost = await self.phase(run, name, pid,
                                                        self.rtt_loop(conn, B.NOKE["rx"], a.ops, cmd, resp, q))
                    self.record_rtt(run, name, ms, lost, cost)
                # soak before burst: a burst can break a peer (dbus-next in bless
                # raises BlockingIOError once its socket buffer is full).
                if a.soak and run.impl.key in a.soak_impls:
                    await self.soak(run, conn, q, pid, a.soak)
                if run.impl.burst:
                    await self.burst(run, conn, q, pid, a.bursts)
            else:
                sub = B.BLEPROOF["config"] if run.impl.echo else B.BLEPROOF["status"]
                await conn.subscribe(sub, q.put_nowait, indicate=True)
                await asyncio.sleep(0.3)
                good = ('<{"thingName":"Daikin_d813997f4904","action":"bleconfig","ssid":"HUAWEI-1CAFB0",'
                        '"password":"1","setkey":"cfe18ee376b5fb4b14245ad92f167787"}>').encode()
                # check the behaviour once
                await conn._char(B.BLEPROOF["config"]).write_value(good, with_response=True)
                v = await asyncio.wait_for(q.get(), 10)
                run.results["bleproof_answer"] = v.decode(errors="replace")
                n = max(1, a.ops // 2)
                (ms, lost), cost = await self.phase(run, "rtt_indicate", pid,
                                                    self.rtt_loop(conn, B.BLEPROOF["config"], n, lambda i: good,
                                                                  True, q))
                self.record_rtt(run, "rtt_indicate", ms, lost, cost)
            run.results["mem_end_kib"] = mem_kib(pid)
        except Exception as e:  # noqa: BLE001 - keep going with the other implementations
            run.errors.append(f"{type(e).__name__}: {e}")
            log(f"  ERROR {run.impl.key}/{run.profile}: {type(e).__name__}: {e}")
        finally:
            run.results["mem_end_kib"] = run.results.get("mem_end_kib") or mem_kib(pid)
            if conn is not None:
                try:
                    await asyncio.wait_for(conn.disconnect(), 10)
                except Exception:  # noqa: BLE001
                    pass
            self.stop(p)
            # next peripheral starts from no advertisement
            if await self.watch.wait(lambda x: x == 0, 15) is None:
                run.errors.append("advertisement still registered 15 s after the process stopped")
            await asyncio.sleep(0.5)

    # -------------------------------------------------------------- the relay
    async def relay(self, runs: list[Run]) -> dict:
        """The same gattemu device directly and through `gattemu relay`, one after the other (relay_bench.py)."""
        a, env = self.args, self.env
        rel: dict = {"soak_ops": a.relay_soak}
        link = self.link
        if link:
            rel["link"] = {"interval_ms": link[0], "packets_per_event": link[1],
                           "most_per_s": round(link[1] * 1000 / link[0], 1)}
        missing = [v for v in ("GATTEMU_CENTRAL2", "GATTEMU_CENTRAL3", "GATTEMU_CENTRAL3_ADDRESS") if not env.get(v)]
        profile = LINK_PROFILE if link else "noke"
        direct, relayed = Run(RELAY_DIRECT, profile), Run(RELAY, profile)
        runs += [direct, relayed]
        if missing or not Path(a.gattemu).exists():
            why = f"needs {', '.join(missing)} (two spare controllers: patched btvirt)" if missing else f"{a.gattemu} missing"
            relayed.errors.append(f"not run: {why}")
            return rel
        log("gattemu relay: the device directly, then through the relay")
        # No EATT for this section: bluetoothd as the relay's central would spread write commands over several ATT
        # channels and the device would get them out of order (docs/relay.md). Restored at the end.
        single_channel = LOGDIR / "main-single-channel.conf"
        single_channel.write_text("[Policy]\nAutoEnable=true\n\n[GATT]\nChannels = 1\n")
        restart_bluetoothd(single_channel)
        try:
            return await self.relay_section(runs, rel, direct, relayed)
        finally:
            restart_bluetoothd(None)

    async def relay_section(self, runs: list[Run], rel: dict, direct: Run, relayed: Run) -> dict:
        a, env = self.args, self.env
        device_argv = Impl("gattemu", "", "AcquireNotify").argv("noke", env)
        base = self.watch.active
        device = self.spawn_argv(device_argv, p_log(direct))
        relay_proc = None
        device_log_start = 0
        events = LOGDIR / "relay-events.jsonl"
        connections: list = []
        try:
            if await self.watch.wait(lambda x: x > base, 60) is None:
                raise RuntimeError("the device's advertisement was not registered within 60 s")
            info = await self.central.find(address=env["GATTEMU_PERIPH_ADDRESS"], service_uuid=B.NOKE["service"], timeout=60)
            # The soak directly too: the control that tells the relay's losses and reorderings from the device's.
            conn_d, q_d = await self.relay_leg(direct, info, device.pid, soak=a.relay_soak)
            connections.append(conn_d)
            # The direct link stays (for the bursts, below), not subscribed while the relay is measured.
            await conn_d._char(B.NOKE["tx"]).unsubscribe()
            events.unlink(missing_ok=True)
            await asyncio.sleep(0.2)  # the device's log is batched (at most 50 ms)
            device_log_start = p_log(direct).stat().st_size
            relay_argv = [env["GATTEMU_BIN"], "relay", info.address, "--adapter", env["GATTEMU_CENTRAL3"],
                          "--upstream-adapter", env["GATTEMU_CENTRAL2"], "--events", str(events), "--control", "off"]
            t0 = now()
            relay_proc = self.spawn_argv(relay_argv, p_log(relayed))
            mirror = await self.central.find(address=env["GATTEMU_CENTRAL3_ADDRESS"], service_uuid=B.NOKE["service"],
                                             timeout=R.MIRROR_WAIT_S)
            relayed.results["start_to_mirror_seen_ms"] = (now() - t0) * 1000
            conn_r, q_r = await self.relay_leg(relayed, mirror, relay_proc.pid, soak=a.relay_soak)
            connections.append(conn_r)
            # The throughput ratio from bursts taking turns over both links: the machine's speed under TCG drifts
            # between runs and within one (benchmarks/README.md), and a ratio of two phases measured one after the
            # other carried that drift.
            pairs = await self.interleaved_bursts(
                [(direct, conn_d, q_d, device.pid, False), (relayed, conn_r, q_r, relay_proc.pid, True)], a.bursts)
            rel["burst_pair_ratios"] = [round(x, 3) for x in pairs]
            # A paced link caps the rate: a direct rate above the cap means the radio is not pacing (an unpatched
            # btvirt, or GATTEMU_LINK lost on the way), and the ratio would measure the CPU instead.
            rate, most = direct.results.get("burst", {}).get("notifications_per_s"), (rel.get("link") or {}).get("most_per_s")
            if rate is not None and most is not None and rate > most * 1.05:
                direct.errors.append(f"the link is not paced: {rate:.1f} notifications/s directly, at most {most} "
                                     f"on GATTEMU_LINK={env.get('GATTEMU_LINK')}")
        except Exception as e:  # noqa: BLE001 - report it, keep the rest of the bench
            relayed.errors.append(f"{type(e).__name__}: {e}")
            log(f"  ERROR relay: {type(e).__name__}: {e}")
        finally:
            for conn in connections:
                await self.disconnect(conn)
            if relay_proc is not None:
                self.stop(relay_proc)
                rel["relay_exit"] = relay_proc.returncode
            self.stop(device)
            if await self.watch.wait(lambda x: x == 0, 15) is None:
                relayed.errors.append("the device's advertisement still registered 15 s after it stopped")
        if relay_proc is not None:
            legs = R.relay_legs(events)
            legs["legs"] = {k: {"n": len(v), "p50_ms": percentile(v, 50), "p99_ms": percentile(v, 99)}
                            for k, v in legs.pop("legs_ms", {}).items()}
            rel.update(legs)
            rel["device_counts"] = R.device_counts(p_log(direct), device_log_start)
            try:
                shutil.copy2(events, self.out / events.name)
            except OSError:
                pass
            for run in (direct, relayed):
                s = run.results.get("soak")
                if s and not s["ok"]:
                    run.errors.append(f"soak: {s['missing']} lost, {s['duplicates']} repeated, {s['reordered']} reordered "
                                      f"of {s['sent']} ({s['first_problem']}); layers: {rel.get('counts')} "
                                      f"{rel['device_counts']}")
        return rel

    async def relay_leg(self, run: Run, info, pid: int, soak: int = 0):
        """Round trips and a soak over a new connection to `info`; answers the connection and its notification queue,
        still subscribed (the caller disconnects)."""
        a = self.args
        # Pinned: the device and its mirror advertise alike.
        conn = await self.connect(info, B.NOKE["service"], pinned=True)
        try:
            q: asyncio.Queue = asyncio.Queue()
            await conn.subscribe(B.NOKE["tx"], q.put_nowait)
            await asyncio.sleep(0.3)

            def cmd(i):
                b = bytearray(20)
                b[2] = i & 0xFF
                return bytes(b)
            await self.rtt_loop(conn, B.NOKE["rx"], min(20, a.ops), cmd, True, q, timeout=5)
            for name, resp in (("rtt_write_req", True), ("rtt_write_cmd", False)):
                (ms, lost), cost = await self.phase(run, name, pid, self.rtt_loop(conn, B.NOKE["rx"], a.ops, cmd, resp, q))
                self.record_rtt(run, name, ms, lost, cost)
            if soak:
                res = await R.soak(conn, B.NOKE["rx"], q, soak)
                run.results["soak"] = res
                log(f"  {run.impl.key} soak: {res['received']}/{res['sent']} answered, {res['missing']} lost, "
                    f"{res['duplicates']} repeated, {res['reordered']} reordered, {fmt(res['ops_per_s'])} ops/s")
            return conn, q
        except BaseException:
            await self.disconnect(conn)
            raise

    @staticmethod
    async def disconnect(conn) -> None:
        try:
            await asyncio.wait_for(conn.disconnect(), 10)
        except Exception:  # noqa: BLE001
            pass



def p_log(run: Run) -> Path:
    return LOGDIR / f"peripheral-{run.impl.key}-{run.profile}.log"


def gattemu_burst_rate(path: Path) -> float | None:
    """Notifications/s as gattemu itself sent them (its log timestamps every notify):
    per burst, first to last `notify ... tx 50..` after a `write ... rx b0..`."""
    import re
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    spans, cur = [], []
    for line in lines:
        m = re.match(r"\s*([\d.]+) ms (\S+)\s+(.*)", line)
        if not m:
            continue
        t, kind, rest = float(m[1]), m[2], m[3]
        if kind == "write" and " rx b0" in rest:
            if len(cur) > 1:
                spans.append(cur)
            cur = []
        elif kind == "notify" and " tx 50" in rest:
            cur.append(t)
    if len(cur) > 1:
        spans.append(cur)
    n = sum(len(c) - 1 for c in spans)
    dt = sum(c[-1] - c[0] for c in spans) / 1000
    return n / dt if dt > 0 else None


def fmt(x, digits=1) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


# ------------------------------------------------------------------ report
def ratio(a, b):
    return (a / b) if (a is not None and b not in (None, 0)) else None


def report(runs: list[Run], meta: dict) -> tuple[dict, str]:
    by = {(r.impl.key, r.profile): r for r in runs}
    impls = [i for i in IMPLS if any(k == i.key for k, _ in by)]

    def g(key, profile, *path):
        r = by.get((key, profile))
        v = r.results if r else None
        for p in path:
            v = v.get(p) if isinstance(v, dict) else None
        return v

    rows = [
        ("start → adv registered (ms), Noke", ("noke", "start_to_registered_ms")),
        ("start → adv registered (ms), BLEProof", ("bleproof", "start_to_registered_ms")),
        ("start → central sees adv (ms), Noke", ("noke", "start_to_seen_ms")),
        ("start → first read (ms), Noke", ("noke", "start_to_first_read_ms")),
        ("start → first read (ms), BLEProof", ("bleproof", "start_to_first_read_ms")),
        ("RTT write-req → notify p50 (ms)", ("noke", "rtt_write_req", "p50_ms")),
        ("RTT write-req → notify p99 (ms)", ("noke", "rtt_write_req", "p99_ms")),
        ("RTT write-cmd → notify p50 (ms)", ("noke", "rtt_write_cmd", "p50_ms")),
        ("RTT write-cmd → notify p99 (ms)", ("noke", "rtt_write_cmd", "p99_ms")),
        ("RTT write-req → indicate p50 (ms), BLEProof", ("bleproof", "rtt_indicate", "p50_ms")),
        ("RTT write-req → indicate p99 (ms), BLEProof", ("bleproof", "rtt_indicate", "p99_ms")),
        ("CPU per 1,000 write-req→notify (ms)", ("noke", "rtt_write_req", "cpu_ms_per_1000")),
        ("CPU per 1,000 write-cmd→notify (ms)", ("noke", "rtt_write_cmd", "cpu_ms_per_1000")),
        ("CPU per 1,000 write→indicate (ms), BLEProof", ("bleproof", "rtt_indicate", "cpu_ms_per_1000")),
        ("bluetoothd CPU per 1,000 write-cmd→notify (ms)", ("noke", "rtt_write_cmd", "bluetoothd_cpu_ms_per_1000")),
        ("burst notifications/s (central receives)", ("noke", "burst", "notifications_per_s")),
        ("burst notifications/s (gattemu's own log)", ("noke", "burst", "peripheral_side_notifications_per_s")),
        ("CPU per 1,000 burst notifications (ms)", ("noke", "burst", "cpu_ms_per_1000")),
        ("soak write-cmd→notify ops/s (8 in flight)", ("noke", "soak", "ops_per_s")),
        ("CPU per 1,000 soak ops (ms)", ("noke", "soak", "cpu_ms_per_1000")),
        ("peak RSS VmHWM (KiB), Noke", ("noke", "mem_end_kib", "VmHWM")),
        ("peak RSS VmHWM (KiB), BLEProof", ("bleproof", "mem_end_kib", "VmHWM")),
        ("anonymous memory at the end (KiB), Noke", ("noke", "mem_end_kib", "Anonymous")),
    ]
    soak_cps = meta.get("soak") or []
    for cp in soak_cps:
        rows.append((f"RSS after {cp} soak ops (KiB)", ("noke", "soak", "points", cp)))

    def value(key, spec):
        prof, *path = spec
        if len(path) == 3 and path[1] == "points":
            pts = g(key, prof, "soak", "points") or []
            for pt in pts:
                if pt["ops"] == path[2]:
                    return pt["mem_kib"].get("VmRSS")
            return None
        return g(key, prof, *path)

    table = {}
    for label, spec in rows:
        table[label] = {i.key: value(i.key, spec) for i in impls}

    peers = [i for i in impls if not i.key.startswith("gattemu")]
    peers += [i for i in impls if i.key == BASELINE_KEY]  # this build against the baseline: the change's ratio
    head = ["figure"] + [i.label for i in impls] + [f"gattemu/{p.label}" for p in peers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, vals in table.items():
        g0 = vals.get("gattemu")
        cells = [label] + [fmt(vals[i.key]) for i in impls] + [fmt(ratio(g0, vals[p.key]), 2) for p in peers]
        lines.append("| " + " | ".join(cells) + " |")
    md_table = "\n".join(lines)

    # targets
    def tv(key, *path):
        return g(key, *path)
    t = []

    def target(name, measured, goal, ok):
        t.append({"target": name, "measured": measured, "goal": goal,
                  "met": None if ok is None else bool(ok)})

    r_start = ratio(tv("gattemu", "noke", "start_to_registered_ms"), tv("bless", "noke", "start_to_registered_ms"))
    target("start → advertising vs bless (Noke)", r_start, "≤ 0.20", None if r_start is None else r_start <= 0.2)
    r_cpu = ratio(tv("gattemu", "noke", "rtt_write_cmd", "cpu_ms_per_1000"),
                  tv("bless", "noke", "rtt_write_cmd", "cpu_ms_per_1000"))
    target("CPU per 1,000 write→notify vs bless (write-cmd)", r_cpu, "≤ 0.20", None if r_cpu is None else r_cpu <= 0.2)
    r_cpu2 = ratio(tv("gattemu", "noke", "rtt_write_req", "cpu_ms_per_1000"),
                   tv("bless", "noke", "rtt_write_req", "cpu_ms_per_1000"))
    target("CPU per 1,000 write→notify vs bless (write-req)", r_cpu2, "≤ 0.20",
           None if r_cpu2 is None else r_cpu2 <= 0.2)
    r_rtt = ratio(tv("gattemu", "noke", "rtt_write_req", "p50_ms"), tv("bluetoothctl", "noke", "rtt_write_req", "p50_ms"))
    target("p50 RTT vs bluetoothctl (write-req → notify)", r_rtt, "≤ 1.10", None if r_rtt is None else r_rtt <= 1.10)
    r_rtt2 = ratio(tv("gattemu", "noke", "rtt_write_cmd", "p50_ms"), tv("bluetoothctl", "noke", "rtt_write_cmd", "p50_ms"))
    target("p50 RTT vs bluetoothctl (write-cmd → notify)", r_rtt2, "≤ 1.10", None if r_rtt2 is None else r_rtt2 <= 1.10)
    rate = tv("gattemu", "noke", "burst", "notifications_per_s")
    target("AcquireNotify stream (central-received notifications/s)", rate, "≥ 7000",
           None if rate is None else rate >= 7000)
    r_rss = ratio(tv("gattemu", "noke", "mem_end_kib", "VmHWM"), tv("bless", "noke", "mem_end_kib", "VmHWM"))
    target("peak RSS vs bless (Noke)", r_rss, "≤ 0.33", None if r_rss is None else r_rss <= 1 / 3)
    pts = tv("gattemu", "noke", "soak", "points") or []
    if len(pts) >= 2:
        a0, a1 = pts[0]["mem_kib"].get("VmRSS"), pts[-1]["mem_kib"].get("VmRSS")
        growth = (a1 - a0) if a0 and a1 else None
        target(f"RSS flat between {pts[0]['ops']} and {pts[-1]['ops']} ops (KiB growth)", growth,
               "≤ 5 % (flat)", None if growth is None else growth <= 0.05 * a0)

    paced = (meta.get("relay_link") or {}).get("relay")
    relay_md = relay_report(by, meta.get("relay"), target, judged=paced is None) if meta.get("relay") is not None else ""
    if paced is not None:
        relay_md += "\n" + relay_report(by, paced, target, profile=LINK_PROFILE)

    tl = ["| target | measured | goal | met |", "|---|---|---|---|"]
    for x in t:
        tl.append(f"| {x['target']} | {fmt(x['measured'], 3)} | {x['goal']} | "
                  f"{'–' if x['met'] is None else ('yes' if x['met'] else 'NO')} |")
    errs = [f"- {r.impl.key}/{r.profile}: {e}" for r in runs for e in r.errors]
    md = "\n".join([
        "# gattemu benchmark", "",
        f"{meta['date']} · {'quick' if meta['quick'] else 'full'} · {meta['ops']} round trips per loop · "
        f"central Bumble on {meta['central']}, peripheral {meta['periph']} · "
        f"requested connection interval {CONN_INTERVAL_MS} ms (btvirt does not schedule by it) · "
        f"wall {meta.get('wall_s', 0):.0f} s", "",
        "Absolute figures are from software emulation (qemu TCG) and are not comparable across runs; "
        "the gattemu/peer ratios, measured side by side in this run, are. See benchmarks/README.md.", "",
        md_table, "", relay_md, "## Targets", "", "\n".join(tl), "",
        "## Errors" if errs else "", "\n".join(errs), "",
    ])
    data = {"meta": meta, "runs": [{"impl": r.impl.key, "label": r.impl.label, "profile": r.profile,
                                     "notify_path": r.impl.notify_path, "results": r.results, "errors": r.errors}
                                    for r in runs],
            "table": table, "targets": t}
    return data, md


def relay_report(by: dict, rel: dict, target, profile: str = "noke", judged: bool = True) -> str:
    """bench.md's relay section for the runs of `profile` (LINK_PROFILE: on a paced link); adds the relay's lines to
    the targets through `target(name, measured, goal, ok)`, the throughput judged against ≥ 0.90 when `judged`."""
    d, r = by.get(("relay-direct", profile)), by.get(("relay", profile))
    if d is None or r is None:
        return ""
    link = rel.get("link")

    def g(run, *path):
        v = run.results
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        return v

    rows = [("RTT write-req → notify p50 (ms)", ("rtt_write_req", "p50_ms")),
            ("RTT write-req → notify p99 (ms)", ("rtt_write_req", "p99_ms")),
            ("RTT write-cmd → notify p50 (ms)", ("rtt_write_cmd", "p50_ms")),
            ("RTT write-cmd → notify p99 (ms)", ("rtt_write_cmd", "p99_ms")),
            ("round trips timed out", ("rtt_write_req", "lost")),
            ("burst notifications/s (central receives)", ("burst", "notifications_per_s")),
            ("burst notifications missing", ("burst", "missing")),
            ("CPU per 1,000 write-req→notify (ms): device / relay process", ("rtt_write_req", "cpu_ms_per_1000")),
            ("CPU per 1,000 burst notifications (ms): device / relay process", ("burst", "cpu_ms_per_1000")),
            ("the machine's CPU per 1,000 burst notifications (ms, all processes and interrupts)",
             ("burst", "machine", "ms_per_1000_busy")),
            ("CPUs busy during the bursts (1.00 = every CPU, all the time)", ("burst", "machine", "busy_fraction"))]
    if link:
        where = (" on a paced link", f" Every link of this run's radio (a second VM, `GATTEMU_LINK="
                 f"{link['interval_ms']}/{link['packets_per_event']}`) has a connection event every "
                 f"{link['interval_ms']} ms carrying at most {link['packets_per_event']} packets each way, as a real "
                 f"one does: at most {fmt(link['most_per_s'])} notifications/s on a link. Here the radio sets the "
                 "rate, as on a rig; above, the emulated CPU does.")
    else:
        where = ("", " btvirt's links are not paced: a packet crosses as soon as the CPU gets to it, so the rates "
                 "below are what two vCPUs can push through two emulated radios, the central included.")
    lines = [f"## gattemu relay{where[0]}", "",
             "The same device (gattemu, `benchmarks/profiles/noke-burst.json`) directly and through `gattemu relay` "
             "(upstream and mirror on two more controllers), in this run. CPU is the device's process directly and "
             "the relay's process relayed. The bursts take turns over the two links (below)." + where[1], "",
             "| figure | directly | through the relay | relayed − direct | relayed / direct |", "|---|---|---|---|---|"]
    for label, path in rows:
        a, b = g(d, *path), g(r, *path)
        diff = (b - a) if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None
        lines.append(f"| {label} | {fmt(a)} | {fmt(b)} | {fmt(diff)} | {fmt(ratio(b, a), 2)} |")
    for kind, leg in (rel.get("legs") or {}).items():
        lines.append(f"| relay's own leg: device answered the {kind}, p50 / p99 (ms, n = {leg['n']}) | | "
                     f"{fmt(leg['p50_ms'])} / {fmt(leg['p99_ms'])} | | |")
    lines.append(f"| start → mirror seen by the central (ms) | | {fmt(g(r, 'start_to_mirror_seen_ms'))} | | |")
    md, mr = g(d, "burst", "machine", "ms_per_1000_by_process") or {}, g(r, "burst", "machine", "ms_per_1000_by_process") or {}
    if md or mr:
        # Where the machine's CPU went during the bursts: a relayed notification crosses two links (two more
        # passes through bluetoothd and the kernel) besides the relay's process.
        top = sorted(set(md) | set(mr), key=lambda n: -(mr.get(n, 0.0) + md.get(n, 0.0)))[:8]
        parts = [f"{n} {fmt(md.get(n))} → {fmt(mr.get(n))}" for n in top]
        rest = (g(d, "burst", "machine", "ms_per_1000_not_in_processes"), g(r, "burst", "machine", "ms_per_1000_not_in_processes"))
        lines += ["", "**The machine's CPU per 1,000 burst notifications, by process** (ms, directly → through the relay; "
                  "the relay's process is `gattemu`, with the device's): " + ", ".join(parts)
                  + f"; not in a process (interrupts, exited threads) {fmt(rest[0])} → {fmt(rest[1])}.", ""]
    rate = ratio(g(r, "burst", "notifications_per_s"), g(d, "burst", "notifications_per_s"))
    pairs = sorted(rel.get("burst_pair_ratios") or [])
    if pairs:
        lines += ["", f"**Bursts taking turns:** {g(d, 'burst', 'bursts')} bursts of {B.BURST} notifications over each "
                  "link, one after the other in ABBA order, only the bursting link subscribed. Relayed / direct rate of "
                  f"each pair: median {fmt(percentile(pairs, 50), 2)}, lowest {fmt(pairs[0], 2)}, highest "
                  f"{fmt(pairs[-1], 2)} ({', '.join(fmt(x, 2) for x in rel['burst_pair_ratios'])})."]
    on = (f" (link paced at {link['interval_ms']} ms, {link['packets_per_event']} packets per event)" if link
          else " (unpaced radio: CPU-bound)")
    target(f"relay: notification throughput, relayed / direct{on}", rate,
           "≥ 0.90" if judged else "(reported; judged on the paced link)",
           None if rate is None or not judged else rate >= 0.9)
    for k in ("rtt_write_req", "rtt_write_cmd"):
        over = ratio(g(r, k, "p50_ms"), g(d, k, "p50_ms"))
        target(f"relay: p50 {k[4:].replace('_', '-')} → notify, relayed / direct{on}", over, "(reported)", None)
    def soak_line(s) -> str:
        return (f"{s['sent']:,} write commands `B1 hi lo` ({s['window']} in flight), {s['received']:,} answers `52 hi lo` "
                f"received, {s['distinct']:,} distinct: {s['missing']} lost, {s['duplicates']} repeated, "
                f"{s['reordered']} reordered" + (f" (first: {s['first_problem']})" if s["first_problem"] else "")
                + f"; {fmt(s['ops_per_s'])} ops/s")

    sd, s = g(d, "soak"), g(r, "soak")
    if sd:
        lines += ["", f"**Soak directly** (the control): {soak_line(sd)}."]
        target(f"device directly: soak of {sd['sent']:,} operations, none lost, repeated or reordered",
               sd["missing"] + sd["duplicates"] + sd["reordered"], "0", sd["ok"] and sd["sent"] == sd["requested"])
    if s:
        counts = {**(rel.get("counts") or {}), **(rel.get("device_counts") or {})}
        lines += ["", f"**Soak through the relay:** {soak_line(s)}. Per layer: the relay forwarded "
                  f"{fmt(counts.get('soak_writes_forwarded'))} writes, the device received "
                  f"{fmt(counts.get('soak_writes_received'))} ({fmt(counts.get('soak_writes_received_out_of_order'))} of "
                  f"them out of order) and notified {fmt(counts.get('soak_notifications_sent'))}, "
                  f"the relay got {fmt(counts.get('soak_notifications_from_device'))} of them from the device"
                  + (f"; {rel['dropped_note']}" if rel.get("dropped_note") else "") + "."]
        target(f"relay: soak of {s['sent']:,} operations, none lost, repeated or reordered",
               s["missing"] + s["duplicates"] + s["reordered"], "0", s["ok"] and s["sent"] == s["requested"])
    elif rel.get("soak_ops"):
        target("relay: soak, none lost, repeated or reordered", None, "0", False)
    return "\n".join(lines) + "\n"


def with_first_pass(path: Path, runs: list[Run], meta: dict) -> tuple[list[Run], dict]:
    """The runs and meta of the first pass (its bench.json), with this paced-link pass's relay runs and section
    (`meta["relay_link"]`) added; this pass's own runs keep their errors, so the exit code covers both."""
    first = json.loads(path.read_text())
    known = {i.key: i for i in IMPLS + [RELAY_DIRECT, RELAY]}
    before = [Run(known[x["impl"]], x["profile"], x["results"], x["errors"]) for x in first["runs"] if x["impl"] in known]
    merged = dict(first["meta"])
    merged["relay_link"] = {"relay": meta.get("relay"), "date": meta["date"], "wall_s": meta["wall_s"]}
    return before + runs, merged


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.environ.get("GATTEMU_OUT", "out"), "bench"))
    ap.add_argument("--quick", action="store_true", help="smoke run: few operations")
    ap.add_argument("--ops", type=int, help="round trips per RTT loop (default 1000, quick 15)")
    ap.add_argument("--bursts", type=int, help="burst writes (default 8, quick 1)")
    ap.add_argument("--soak", help="comma-separated RSS checkpoints in ops (default 10000,100000; quick 200,600; 0 = off)")
    ap.add_argument("--soak-impls", default="gattemu,bless",
                    help="implementations that get the soak (default gattemu,bless)")
    ap.add_argument("--impls", default=",".join([i.key for i in IMPLS] + ["relay"]),
                    help="implementations, and `relay` for the relay section (default: all)")
    ap.add_argument("--relay-soak", type=int,
                    help="sequence-numbered operations through the relay (default 10000, quick 1000; 0 = off)")
    ap.add_argument("--profiles", default="noke,bleproof")
    ap.add_argument("--perf", metavar="PHASE[,PHASE]",
                    help="perf record each implementation during these phases (rtt_write_req, rtt_write_cmd, "
                         "rtt_indicate, ...): perf-IMPL-PROFILE-PHASE.txt in the output folder")
    ap.add_argument("--gattemu", default=str(ROOT / ".build" / "release" / "gattemu"))
    ap.add_argument("--baseline", metavar="BIN", help="another gattemu build, run beside this one as `gattemu-base`")
    ap.add_argument("--baseline-label", default="baseline", help="what the baseline is (its revision), in the tables")
    ap.add_argument("--link-of", metavar="BENCH_JSON",
                    help="the paced-link pass (scripts/bench's second VM, GATTEMU_LINK set): run the relay section "
                         "only and write the report of BENCH_JSON's run with this section added")
    a = ap.parse_args()
    if a.baseline and not Path(a.baseline).is_file():
        print(f"bench: no baseline build at {a.baseline}", file=sys.stderr)
        return 2
    if a.baseline:
        IMPLS.append(Impl(BASELINE_KEY, f"gattemu {a.baseline_label} (AcquireNotify)", "AcquireNotify"))
        if BASELINE_KEY not in a.impls.split(","):
            a.impls += "," + BASELINE_KEY
    a.ops = a.ops or (15 if a.quick else 1000)
    # The paced pass's throughput is judged (≥ 0.90): 8 bursts a link even in a quick run, where one would do to
    # see that the figures come out.
    a.bursts = a.bursts if a.bursts is not None else (1 if a.quick and not a.link_of else 8)
    soak = a.soak if a.soak is not None else ("200,600" if a.quick else "10000,100000")
    a.soak = [int(x) for x in soak.split(",") if int(x) > 0]
    a.soak_impls = a.soak_impls.split(",")
    if a.baseline and "gattemu" in a.soak_impls:
        a.soak_impls.append(BASELINE_KEY)
    a.relay_soak = a.relay_soak if a.relay_soak is not None else (1000 if a.quick else 10000)
    env = {k: v for k, v in os.environ.items() if k.startswith("GATTEMU_")}
    for v in ("GATTEMU_PERIPH", "GATTEMU_CENTRAL", "GATTEMU_PERIPH_ADDRESS"):
        if not env.get(v):
            print(f"bench: {v} not set: run inside scripts/sandbox (use scripts/bench)", file=sys.stderr)
            return 2
    env["GATTEMU_BIN"] = a.gattemu
    # The project share is 9p with cache=none: a binary started from it is re-read over virtio on every page fault,
    # while the peers' Python and modules come from the cached root share. A rig runs it from a local disk with a
    # page cache; the VM's tmpfs stands in for that (for the baseline build too, so both are measured alike).
    for variable, binary, name in (("GATTEMU_BIN", a.gattemu, "gattemu"), ("GATTEMU_BASELINE_BIN", a.baseline, "gattemu-baseline")):
        if binary and Path(binary).exists():
            LOGDIR.mkdir(parents=True, exist_ok=True)
            shutil.copy2(binary, LOGDIR / name)
            env[variable] = str(LOGDIR / name)
    keys = a.impls.split(",")
    link = link_model(env)
    if a.link_of:
        if not link:
            print(f"bench: --link-of needs a paced radio (GATTEMU_LINK=INTERVAL_MS/PACKETS, got "
                  f"{env.get('GATTEMU_LINK')!r}); btvirt.log does not say it paces the links", file=sys.stderr)
            return 2
        keys = ["relay"]
    # In the order asked: under TCG the first implementation of a VM can come out slower (compare a before/after
    # run in both orders, benchmarks/README.md).
    impls = [i for k in keys for i in IMPLS if i.key == k]
    bench = Bench(a, env, link)
    t0 = now()
    await bench.setup()
    log("warming the page cache (binaries and Python modules come over 9p)")
    for argv in ([env["GATTEMU_BIN"], "validate", "--allow-extends-outside", str(HERE / "profiles" / "noke-burst.json")],
                 [sys.executable, "-c", "import bless, bluez_peripheral, dbus_next"],
                 ["bluetoothctl", "--version"]):
        subprocess.run(argv, capture_output=True, timeout=120)
    runs = []
    # Interleave: per profile, every implementation in turn (same VM, same minute).
    for profile in a.profiles.split(","):
        for impl in impls:
            if impl.key.startswith("gattemu") and not Path(a.gattemu).exists():
                r = Run(impl, profile)
                r.errors.append(f"{a.gattemu} missing (swift build -c release)")
                runs.append(r)
                continue
            r = Run(impl, profile)
            runs.append(r)
            await bench.run_one(r)
    relay = await bench.relay(runs) if "relay" in keys else None
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "quick": a.quick, "ops": a.ops, "bursts": a.bursts,
            "burst_size": B.BURST, "soak": a.soak, "central": env["GATTEMU_CENTRAL"],
            "periph": env["GATTEMU_PERIPH"], "conn_interval_requested_ms": CONN_INTERVAL_MS,
            "wall_s": now() - t0, "uname": os.uname().release,
            "gattemu": a.gattemu, "relay": relay}
    if a.link_of:
        runs, meta = with_first_pass(Path(a.link_of), runs, meta)
    data, md = report(runs, meta)
    out = Path(a.out)
    (out / "bench.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    (out / "bench.md").write_text(md)
    print(md, flush=True)
    try:
        await bench.central.close()
    except Exception:  # noqa: BLE001
        pass
    ok = all(not r.errors for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

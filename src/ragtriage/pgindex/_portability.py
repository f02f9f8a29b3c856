"""Does a shared object (pgvector's ``vector.so``) run on any x86-64 CPU?

A ``vector.so`` compiled with ``-march`` for a CPU with AVX-512 (EVEX-encoded
instructions: zmm registers, ``xmm16``-``xmm31``, opmask ``k`` registers) kills the
PostgreSQL backend with SIGILL ("invalid opcode") on a CPU without it (an AMD EPYC
with AVX2 only, say) the first time a distance is computed. pgvector itself uses
AVX-512 only in functions it selects at run time after a CPUID check (its popcount
kernels, named ``...Avx512Popcount``, or GCC ``target_clones`` clones such as
``f.avx512f`` / ``f.arch_x86_64_v4``).

:func:`scan_shared_object` reads the ELF file in pure Python: its symbol table
(``.symtab``, else ``.dynsym``) gives each function's byte range in the executable
sections; a small x86-64 instruction-length decoder walks every range instruction by
instruction (so a 0x62 byte inside an immediate or a displacement is not mistaken for
an EVEX prefix) and counts EVEX-encoded instructions and the VEX-encoded opmask
instructions (``kmov``, ``kand``, ``kortest``, ``kshift``, ...). Code between
symbols (or all code, in a stripped object) is walked too, under a
``<code at 0x...>`` name. A range the decoder cannot walk to its end is listed in
:attr:`PortabilityReport.undecoded`: not known to be portable or not.

Only x86-64 ELF objects are decoded; for another machine (aarch64, ...) the report
says so and lists nothing.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ragtriage.errors import InputError

__all__ = [
    "DISPATCHED",
    "Avx512Use",
    "PortabilityReport",
    "cpu_flags",
    "scan_shared_object",
]

#: Function names that pgvector (or a GCC target_clones resolver) only calls after a
#: run-time CPU check: AVX-512 inside them is expected and safe.
DISPATCHED = re.compile(r"avx512|x86_64_v4|x86-64-v4", re.IGNORECASE)

_EM_X86_64 = 62
_MACHINES = {3: "i386", 40: "arm", 62: "x86-64", 183: "aarch64", 243: "riscv"}
_SHF_EXECINSTR = 0x4
_SHT_SYMTAB, _SHT_DYNSYM = 2, 11
_STT_FUNC, _STT_GNU_IFUNC = 2, 10


@dataclass(frozen=True)
class Avx512Use:
    """One function (or unnamed code range) with AVX-512 instructions."""

    function: str
    address: int  # virtual address of the range's start
    evex: int  # EVEX-encoded instructions
    zmm: int  # ... of which with 512-bit vector length (EVEX.L'L = 2)
    opmask: int  # VEX-encoded opmask (k-register) instructions
    first_offset: int  # offset in the function of the first such instruction
    first_bytes: str  # its bytes, hex
    dispatched: bool  # the name says pgvector picks it after a CPU check

    def describe(self) -> str:
        return (
            f"{self.function} (0x{self.address:x}): {self.evex} EVEX instruction(s)"
            f" ({self.zmm} on zmm), {self.opmask} opmask; first at +0x{self.first_offset:x}:"
            f" {self.first_bytes}"
        )


@dataclass(frozen=True)
class PortabilityReport:
    """What :func:`scan_shared_object` found in one shared object."""

    path: Path
    machine: str
    ranges_scanned: int
    avx512: tuple[Avx512Use, ...]
    undecoded: tuple[str, ...]  # "name (0x...): stopped at +0x..: bytes"

    @property
    def unguarded(self) -> tuple[Avx512Use, ...]:
        """AVX-512 outside the functions selected at run time: SIGILL on a CPU without it."""
        return tuple(u for u in self.avx512 if not u.dispatched)

    @property
    def portable(self) -> bool:
        """No AVX-512 outside run-time-dispatched functions (undecoded ranges aside)."""
        return not self.unguarded

    def describe(self) -> str:
        if self.machine != "x86-64":
            return f"{self.path}: {self.machine} object, no x86 instruction to check"
        lines = [
            f"{self.path}: {self.ranges_scanned} code ranges; "
            f"{len(self.unguarded)} use AVX-512 without a CPU check, "
            f"{len(self.avx512) - len(self.unguarded)} only after one (dispatched)"
        ]
        for u in self.avx512:
            tag = "dispatched" if u.dispatched else "UNGUARDED"
            lines.append(f"  {tag}: {u.describe()}")
        for s in self.undecoded:
            lines.append(f"  not decoded: {s}")
        return "\n".join(lines)


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str] | None:
    """The CPU's feature flags (Linux ``/proc/cpuinfo``: x86 ``flags``, arm64
    ``Features``), or None when they cannot be read."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return None


# --------------------------------------------------------------------------- x86-64
# Immediate kinds.
_NONE, _I8, _I16, _IZ, _IV, _MOFFS, _ENTER, _GRP3B, _GRP3Z, _I32 = range(10)
_BAD = -1

_LEGACY_PREFIXES = frozenset({0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3})


def _one_byte_map() -> tuple[tuple[bool, int], ...]:
    """(has ModRM, immediate kind) for each one-byte opcode (64-bit mode)."""
    t: list[tuple[bool, int]] = [(False, _NONE)] * 256
    for base in range(0x00, 0x40, 8):
        for i in range(4):
            t[base + i] = (True, _NONE)
        t[base + 4] = (False, _I8)
        t[base + 5] = (False, _IZ)
        t[base + 6] = t[base + 7] = (False, _BAD)  # push/pop seg, daa..: invalid in 64-bit
    t[0x63] = (True, _NONE)
    t[0x60] = t[0x61] = (False, _BAD)
    t[0x68] = (False, _IZ)
    t[0x69] = (True, _IZ)
    t[0x6A] = (False, _I8)
    t[0x6B] = (True, _I8)
    for op in range(0x70, 0x80):
        t[op] = (False, _I8)
    t[0x80] = (True, _I8)
    t[0x81] = (True, _IZ)
    t[0x82] = (False, _BAD)
    t[0x83] = (True, _I8)
    for op in range(0x84, 0x90):
        t[op] = (True, _NONE)
    t[0x9A] = (False, _BAD)
    for op in range(0xA0, 0xA4):
        t[op] = (False, _MOFFS)
    t[0xA8] = (False, _I8)
    t[0xA9] = (False, _IZ)
    for op in range(0xB0, 0xB8):
        t[op] = (False, _I8)
    for op in range(0xB8, 0xC0):
        t[op] = (False, _IV)
    t[0xC0] = t[0xC1] = (True, _I8)
    t[0xC2] = (False, _I16)
    t[0xC6] = (True, _I8)
    t[0xC7] = (True, _IZ)
    t[0xC8] = (False, _ENTER)
    t[0xCA] = (False, _I16)
    t[0xCD] = (False, _I8)
    t[0xCE] = (False, _BAD)
    for op in range(0xD0, 0xD4):
        t[op] = (True, _NONE)
    t[0xD4] = t[0xD5] = t[0xD6] = (False, _BAD)
    for op in range(0xD8, 0xE0):
        t[op] = (True, _NONE)
    for op in range(0xE0, 0xE8):
        t[op] = (False, _I8)
    t[0xE8] = t[0xE9] = (False, _I32)
    t[0xEA] = (False, _BAD)
    t[0xEB] = (False, _I8)
    t[0xF6] = (True, _GRP3B)
    t[0xF7] = (True, _GRP3Z)
    t[0xFE] = t[0xFF] = (True, _NONE)
    return tuple(t)


def _two_byte_map() -> tuple[tuple[bool, int], ...]:
    """(has ModRM, immediate kind) for each 0F xx opcode."""
    t: list[tuple[bool, int]] = [(True, _NONE)] * 256
    for op in (0x04, 0x0A, 0x0C, 0x24, 0x25, 0x26, 0x27, 0x39, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F):
        t[op] = (False, _BAD)
    for op in (0x7A, 0x7B, 0xA6, 0xA7):
        t[op] = (False, _BAD)
    for op in (0x05, 0x06, 0x07, 0x08, 0x09, 0x0B, 0x0E, 0x77, 0xA0, 0xA1, 0xA2, 0xA8, 0xA9, 0xAA):
        t[op] = (False, _NONE)
    for op in range(0x30, 0x38):
        t[op] = (False, _NONE)
    for op in range(0xC8, 0xD0):
        t[op] = (False, _NONE)
    for op in range(0x80, 0x90):
        t[op] = (False, _I32)
    for op in (0x0F, 0x70, 0x71, 0x72, 0x73, 0xA4, 0xAC, 0xBA, 0xC2, 0xC4, 0xC5, 0xC6):
        t[op] = (True, _I8)
    return tuple(t)


_ONE = _one_byte_map()
_TWO = _two_byte_map()
# VEX/EVEX map 1 (0F) opcodes followed by an imm8.
_VEX_MAP1_IMM8 = frozenset({0x70, 0x71, 0x72, 0x73, 0xC2, 0xC4, 0xC5, 0xC6})
# VEX-encoded AVX-512 opmask instructions: map 1 and map 3 opcodes.
_OPMASK_MAP1 = frozenset(
    {0x41, 0x42, 0x44, 0x45, 0x46, 0x47, 0x4A, 0x4B, 0x90, 0x91, 0x92, 0x93, 0x98, 0x99}
)
_OPMASK_MAP3 = frozenset({0x30, 0x31, 0x32, 0x33})

# What one decoded instruction is, for the scanner.
_PLAIN, _EVEX, _EVEX512, _OPMASK = 0, 1, 2, 3


class _Undecodable(Exception):
    pass


def _modrm_len(code: bytes, i: int, end: int) -> int:
    """Bytes taken by the ModRM byte at ``i`` and its SIB and displacement."""
    if i >= end:
        raise _Undecodable
    m = code[i]
    mod, rm = m >> 6, m & 7
    n = 1
    if mod == 3:
        return n
    if rm == 4:
        if i + 1 >= end:
            raise _Undecodable
        n += 1
        if mod == 0 and (code[i + 1] & 7) == 5:
            n += 4
    elif mod == 0 and rm == 5:
        n += 4  # RIP-relative disp32
    if mod == 1:
        n += 1
    elif mod == 2:
        n += 4
    return n


def _decode(code: bytes, i: int, end: int) -> tuple[int, int]:
    """(length, kind) of the x86-64 instruction at ``code[i]``; raises _Undecodable."""
    start = i
    opsize16 = addr32 = False
    rex_w = rex = False
    while i < end and code[i] in _LEGACY_PREFIXES:
        opsize16 |= code[i] == 0x66
        addr32 |= code[i] == 0x67
        i += 1
    if i < end and 0x40 <= code[i] <= 0x4F:
        rex, rex_w = True, bool(code[i] & 0x08)
        i += 1
    if i >= end:
        raise _Undecodable
    op = code[i]
    i += 1
    if op in (0x62, 0xC4, 0xC5):
        # EVEX (62 P0 P1 P2) or VEX (C4 b1 b2 / C5 b1): always so in 64-bit mode.
        if rex:
            raise _Undecodable  # a REX prefix before VEX/EVEX is #UD
        if op == 0x62:
            if i + 3 > end:
                raise _Undecodable
            p0, p1, p2 = code[i], code[i + 1], code[i + 2]
            if not p1 & 0x04:
                raise _Undecodable
            vmap, i = p0 & 0x07, i + 3
            kind = _EVEX512 if (p2 >> 5) & 3 == 2 else _EVEX
        elif op == 0xC4:
            if i + 2 > end:
                raise _Undecodable
            vmap, i = code[i] & 0x1F, i + 2
            kind = _PLAIN
        else:
            vmap, i = 1, i + 1
            kind = _PLAIN
        if i >= end:
            raise _Undecodable
        vop = code[i]
        i += 1
        if vmap == 1:
            if op != 0x62 and vop in _OPMASK_MAP1:
                kind = _OPMASK
            if vop == 0x77 and op != 0x62:  # vzeroupper / vzeroall
                return i - start, kind
            i += _modrm_len(code, i, end) + (1 if vop in _VEX_MAP1_IMM8 else 0)
        elif vmap in (2, 5, 6) and (op == 0x62 or vmap == 2):
            i += _modrm_len(code, i, end)
        elif vmap == 3:
            if op != 0x62 and vop in _OPMASK_MAP3:
                kind = _OPMASK
            i += _modrm_len(code, i, end) + 1
        else:
            raise _Undecodable
        if i > end:
            raise _Undecodable
        return i - start, kind
    if op == 0x0F:
        if i >= end:
            raise _Undecodable
        op2 = code[i]
        i += 1
        if op2 in (0x38, 0x3A):
            if i >= end:
                raise _Undecodable
            i += 1  # the third opcode byte
            i += _modrm_len(code, i, end) + (1 if op2 == 0x3A else 0)
        else:
            has_modrm, imm = _TWO[op2]
            if imm == _BAD:
                raise _Undecodable
            if has_modrm:
                i += _modrm_len(code, i, end)
            i += 1 if imm == _I8 else 4 if imm == _I32 else 0
        if i > end:
            raise _Undecodable
        return i - start, _PLAIN
    has_modrm, imm = _ONE[op]
    if imm == _BAD or 0x40 <= op <= 0x4F:  # a REX not right before the opcode
        raise _Undecodable
    reg = (code[i] >> 3) & 7 if has_modrm and i < end else 0
    if has_modrm:
        i += _modrm_len(code, i, end)
    if imm == _I8:
        i += 1
    elif imm == _I16:
        i += 2
    elif imm == _I32:
        i += 4
    elif imm == _IZ:
        i += 2 if opsize16 else 4
    elif imm == _IV:
        i += 8 if rex_w else 2 if opsize16 else 4
    elif imm == _MOFFS:
        i += 4 if addr32 else 8
    elif imm == _ENTER:
        i += 3
    elif imm == _GRP3B and reg in (0, 1):
        i += 1
    elif imm == _GRP3Z and reg in (0, 1):
        i += 2 if opsize16 else 4
    if i > end:
        raise _Undecodable
    return i - start, _PLAIN


def _scan_range(
    name: str, address: int, code: bytes, start: int, end: int
) -> tuple[Avx512Use | None, str | None]:
    evex = zmm = opmask = 0
    first_off = -1
    first_bytes = ""
    i = start
    while i < end:
        try:
            n, kind = _decode(code, i, end)
        except _Undecodable:
            stuck = (
                f"{name} (0x{address:x}): stopped at +0x{i - start:x}: {code[i : i + 8].hex(' ')}"
            )
            break
        if kind != _PLAIN:
            if first_off < 0:
                first_off, first_bytes = i - start, code[i : i + n].hex(" ")
            if kind == _OPMASK:
                opmask += 1
            else:
                evex += 1
                zmm += kind == _EVEX512
        i += n
    else:
        stuck = None
    use = None
    if first_off >= 0:
        use = Avx512Use(
            function=name,
            address=address,
            evex=evex,
            zmm=zmm,
            opmask=opmask,
            first_offset=first_off,
            first_bytes=first_bytes,
            dispatched=bool(DISPATCHED.search(name)),
        )
    return use, stuck


# --------------------------------------------------------------------------- ELF
def _bad(path: Path, what: str) -> InputError:
    return InputError(
        f"not a readable ELF shared object ({what}); read as raw bytes", path=str(path)
    )


def scan_shared_object(path: str | Path) -> PortabilityReport:
    """Scan an ELF shared object for AVX-512 instructions, function by function.

    Raises :class:`~ragtriage.errors.InputError` naming the file for a file that is
    missing or not a 64-bit little-endian ELF object.
    """
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise InputError(f"cannot read the shared object: {exc.strerror}", path=str(p)) from exc
    return _scan_cached(str(p.resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=16)
def _scan_cached(path: str, size: int, mtime_ns: int) -> PortabilityReport:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the shared object: {exc.strerror}", path=path) from exc
    return _scan_bytes(p, data)


def _scan_bytes(p: Path, data: bytes) -> PortabilityReport:
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise _bad(p, "no ELF magic number")
    if data[4] != 2 or data[5] != 1:
        raise _bad(p, "only 64-bit little-endian ELF is read")
    (e_machine,) = struct.unpack_from("<H", data, 18)
    machine = _MACHINES.get(e_machine, f"machine {e_machine}")
    if e_machine != _EM_X86_64:
        return PortabilityReport(p, machine, 0, (), ())
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    if e_shoff == 0 or e_shentsize < 64 or e_shoff + e_shnum * e_shentsize > len(data):
        raise _bad(p, f"section header table at offset {e_shoff} out of the file")
    sections = []
    for k in range(e_shnum):
        off = e_shoff + k * e_shentsize
        _name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, _info, _al, sh_entsize = (
            struct.unpack_from("<IIQQQQIIQQ", data, off)
        )
        sections.append((sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_entsize))
    exec_secs = {
        k: s
        for k, s in enumerate(sections)
        if s[1] & _SHF_EXECINSTR and s[0] != 8  # NOBITS
    }
    for _t, _f, _a, off, size, _l, _e in exec_secs.values():
        if off + size > len(data):
            raise _bad(p, f"executable section at offset {off} runs past the end of the file")
    symtab = next((s for s in sections if s[0] == _SHT_SYMTAB), None) or next(
        (s for s in sections if s[0] == _SHT_DYNSYM), None
    )
    # (start address, end address, section index) -> names
    funcs: dict[tuple[int, int, int], list[str]] = {}
    if symtab is not None:
        _t, _f, _a, off, size, link, entsize = symtab
        if link >= len(sections) or off + size > len(data) or entsize < 24:
            raise _bad(p, "symbol table out of the file")
        str_off, str_size = sections[link][3], sections[link][4]
        for k in range(size // entsize):
            st_name, st_info, _other, st_shndx, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", data, off + k * entsize
            )
            if st_info & 0xF not in (_STT_FUNC, _STT_GNU_IFUNC) or st_size == 0:
                continue
            if st_shndx not in exec_secs:
                continue
            nend = data.find(b"\0", str_off + st_name, str_off + str_size)
            name = data[str_off + st_name : nend].decode("utf-8", "replace")
            funcs.setdefault((st_value, st_value + st_size, st_shndx), []).append(name)
    avx: list[Avx512Use] = []
    undecoded: list[str] = []
    ranges = 0
    for k, (_t, _f, sec_addr, sec_off, sec_size, _l, _e) in exec_secs.items():
        code = data[sec_off : sec_off + sec_size]
        named = sorted((a, b, sorted(set(n))) for (a, b, s), n in funcs.items() if s == k)
        pieces: list[tuple[str, int, int]] = []
        cursor = sec_addr
        for a, b, names in named:
            if a > cursor:
                pieces.append((f"<code at 0x{cursor:x}>", cursor, a))
            pieces.append(("/".join(names), a, b))
            cursor = max(cursor, b)
        if cursor < sec_addr + sec_size:
            pieces.append((f"<code at 0x{cursor:x}>", cursor, sec_addr + sec_size))
        for name, a, b in pieces:
            lo, hi = a - sec_addr, min(b, sec_addr + sec_size) - sec_addr
            if lo < 0 or lo >= hi:
                continue
            ranges += 1
            use, stuck = _scan_range(name, a, code, lo, hi)
            if use is not None:
                avx.append(use)
            if stuck is not None:
                undecoded.append(stuck)
    return PortabilityReport(p, machine, ranges, tuple(avx), tuple(undecoded))
